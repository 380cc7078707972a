"""MkDocs hooks (``hooks:`` in mkdocs.yml): what the build does around the pages' macros.

- Front matter and the experiments' declarations are checked before anything renders, so a
  missing key or a declaration that does not load fails at once, in one line that names it.
- The analysis notebook is executed only when its inputs changed, and frozen (``notebook.py``).
- Titles show powers as superscripts (``2^28`` -> ``2²⁸``) in the page, the nav and search,
  and every entry gets its byline from its front matter.
- The experiments' source files are copied into the site, so pages can link the files that ran.
- Every GPU with results gets a page of its own (``gpu_pages.py``).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

from labnotebook.results.audit import load_error
from labnotebook.errors import NotebookError
from labnotebook.declare.discover import experiment_folders
from labnotebook.results.freshness import CurrentKeys
from labnotebook import settings
from labnotebook.site import frontmatter, gpu_pages, notebook
from labnotebook.site.fmt import superscripts

# mkdocs-macros reports its own set-up (modules, functions, variables found) in seven INFO lines
# at every build. Its warnings and errors (a macro that failed) still show; `mkdocs build -v`
# shows the set-up too.
if not logging.getLogger("mkdocs").isEnabledFor(logging.DEBUG):
    logging.getLogger("mkdocs.plugins.mkdocs_macros").setLevel(logging.WARNING)


def _gpu_pages_only(record: logging.LogRecord) -> bool:
    """MkDocs lists the pages its nav config leaves out before ``on_nav`` has put the GPU pages in
    it: a list of those alone is dropped, any other page still named."""
    message = record.getMessage()
    listed = [line.strip()[2:] for line in message.splitlines()[1:]]
    return not (message.startswith("The following pages exist in the docs directory, but are not included")
                and listed and all(p.startswith(f"{gpu_pages.FOLDER}/") for p in listed))


logging.getLogger("mkdocs.structure.nav").addFilter(_gpu_pages_only)


def _root(config) -> Path:
    return Path(config.config_file_path).parent


@event_priority(100)  # before mkdocs-jupyter wraps the notebook
def on_files(files, config):
    try:
        frontmatter.pages(Path(config.docs_dir), config.nav)
        keys = CurrentKeys(_root(config))  # before the notebook and the pages, which would fail on it further away
        broken = [load_error(name, keys[name].error) for name in keys.names() if keys[name].error]
        if broken:
            raise NotebookError(" | ".join(f.text for f in broken))
        for f in [f for f in files if f.src_uri.endswith(".ipynb")]:
            # The same page, read from the executed copy: ``_freeze/<its path under docs/>``.
            folder = notebook.executed(Path(f.abs_src_path), f.src_uri, _root(config), keys)
            files.remove(f)
            files.append(File(f.src_uri, str(folder), config.site_dir, config.use_directory_urls))
        gpu_pages.add(files, config, gpu_pages.every_gpu(_root(config), keys, settings.of(config).gpus))
    except NotebookError as e:
        raise PluginError(str(e)) from None
    return files


def on_nav(nav, config, files):
    gpu_pages.in_nav(nav, files)
    return nav


def on_page_markdown(markdown, page, config, files):
    if "title" in page.meta:
        page.meta["title"] = superscripts(page.meta["title"])
    if "date" in page.meta and "topic" in page.meta:  # an entry: its byline, from its front matter
        draft = " · draft" if page.meta.get("draft") else ""
        markdown = f'<p class="nb-byline">Entry of {page.meta["date"]}{draft}</p>\n\n{markdown}'
    return markdown


def on_post_build(config):
    """Each experiment's files that ran (those of its key in its folder), for the pages to link."""
    root, site = _root(config), Path(config.site_dir)
    keys = CurrentKeys(root)
    for name in experiment_folders(root / "snippets"):
        for path in keys[name].files:
            if path.startswith(f"snippets/{name}/"):
                (site / path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / path, site / path)
