"""The engine's own errors. The CLI turns them into one ``error: ...`` line; the site into a
visible box on the page plus a warning that fails ``mkdocs build --strict``."""


class NotebookError(Exception):
    """Base class: something the user can fix, with a message that says what."""

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail


class ExperimentError(NotebookError):
    """An experiment's declaration could not be loaded or is inconsistent."""


class CompileError(NotebookError):
    """nvcc rejected a kernel file."""


class ResultsError(NotebookError):
    """A results file is missing, corrupt, or of a format this version cannot read."""


class NoGPUError(NotebookError):
    """No usable GPU, or no PyCUDA, where one is needed."""
