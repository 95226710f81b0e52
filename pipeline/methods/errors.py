"""Errors shared by rating methods."""


class ConvergenceError(RuntimeError):
    """An iterative solver ran out of iterations (`max_iter`) before meeting its tolerance (`tol`)."""
