"""The look every chart shares, the site's and the analysis notebook's: transparent backgrounds
and mid-grey ink, which read on Material's white and slate (dark) pages alike, and text no smaller
than ``MIN_FONT`` points. No backend is chosen here, so a notebook can use it too."""

INK = "#888888"
MIN_FONT = 10
STYLE = {
    "svg.fonttype": "none", "svg.hashsalt": "labnotebook", "font.size": 11,
    "axes.titlesize": 11, "legend.fontsize": MIN_FONT, "xtick.labelsize": MIN_FONT, "ytick.labelsize": MIN_FONT,
    "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": INK,
    "xtick.color": INK, "ytick.color": INK, "axes.facecolor": "none", "figure.facecolor": "none",
    "savefig.transparent": True, "axes.grid": True, "grid.color": INK, "grid.alpha": 0.25,
    "legend.frameon": False,
}
