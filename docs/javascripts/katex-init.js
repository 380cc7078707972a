// Render the math that pymdownx.arithmatex marks, on every page (Material's instant loading
// swaps pages without a reload, so this runs on each document$ emission), and in search results,
// which Material builds from the page text, with the math still in its \( \) delimiters.
const delimiters = [
  { left: "$$", right: "$$", display: true },
  { left: "$", right: "$", display: false },
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];

const renderMath = (element) => renderMathInElement(element, { delimiters, throwOnError: false });

document$.subscribe(({ body }) => {
  renderMath(body);
  const results = body.querySelector(".md-search-result__list");
  if (results) {
    new MutationObserver((changes) => {
      for (const change of changes) {
        change.addedNodes.forEach((node) => node.nodeType === Node.ELEMENT_NODE && renderMath(node));
      }
    }).observe(results, { childList: true, subtree: true });
  }
});
