"""MkDocs hooks (``hooks:`` in mkdocs.yml): what the build does around the pages' macros.

- Front matter is checked before anything renders, so a missing key fails at once, in one line.
- The analysis notebook is executed only when its inputs changed (``notebook.py``).
- Titles show powers as superscripts (``2^28`` -> ``2²⁸``) in the page, the nav and search,
  and every entry gets its byline from its front matter.
- The experiments' source files are copied into the site, so pages can link the files that ran.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from labnotebook.errors import NotebookError
from labnotebook.experiments import experiment_folders, source_files
from labnotebook.site import frontmatter, notebook
from labnotebook.site.fmt import superscripts



def _root(config) -> Path:
    return Path(config.config_file_path).parent


@event_priority(100)  # before mkdocs-jupyter wraps the notebook
def on_files(files, config):
    try:
        frontmatter.pages(Path(config.docs_dir), config.nav)
        for f in [f for f in files if f.src_uri.endswith(".ipynb")]:
            # The same page, read from the executed copy: ``<cache>/<key>/<its path under docs/>``.
            folder = notebook.executed(Path(f.abs_src_path), f.src_uri, _root(config), _root(config) / ".cache" / "notebooks")
            files.remove(f)
            files.append(File(f.src_uri, str(folder), config.site_dir, config.use_directory_urls))
    except NotebookError as e:
        raise PluginError(str(e)) from None
    return files


def on_page_markdown(markdown, page, config, files):
    if "title" in page.meta:
        page.meta["title"] = superscripts(page.meta["title"])
    if "date" in page.meta and "topic" in page.meta:  # an entry: its byline, from its front matter
        draft = " · draft" if page.meta.get("draft") else ""
        markdown = f'<p class="nb-byline">Entry of {page.meta["date"]}{draft}</p>\n\n{markdown}'
    return markdown


def on_post_build(config):
    site = Path(config.site_dir)
    for name, folder in experiment_folders(_root(config) / "snippets").items():
        for f in source_files(folder):
            (site / "snippets" / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, site / "snippets" / name / f.name)
