// Render the math that pymdownx.arithmatex marks, on every page (Material's instant loading
// swaps pages without a reload, so this runs on each document$ emission).
document$.subscribe(({ body }) => {
  renderMathInElement(body, {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "$", right: "$", display: false },
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
  });
});
