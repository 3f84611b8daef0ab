"""Robust least squares inside bounds, by damped Gauss-Newton with the bounds held exactly.

Why not scipy's `least_squares(method="trf")`: its reflective trust region (Coleman-Li) scales
each variable by its distance to the bound it is pushed towards, and a fit that starts from a
neutral face has most of its facial actions at their lower bound, 0. There it barely moved at
all: a subdivided mesh of a glance (eyeLookUp 1.0) stayed at no glance after 26 evaluations
(cost 62.9), while one undamped Gauss-Newton step from the same point went most of the way
(gaze 0.92, cost 2.4; docs/metric.md, "Meshes of any topology"). Here every step solves the
damped, linearised problem with the bounds as constraints (bounded-variable least squares on a
square system the size of the unknowns), so a variable at its bound moves as soon as the model
asks it to, and one pushed against its bound stays on it.

The loss is Cauchy's, as scipy defines it: cost = 0.5 f^2 sum log(1 + (r / f)^2). Each step
weighs the residuals by the loss's slope at the current point (iteratively reweighted least
squares); a step is kept only if the true cost falls, so the cost falls monotonically."""

from __future__ import annotations

from typing import Callable

import attrs
import numpy as np
import scipy.linalg
import scipy.optimize

DAMPING_START = 1e-3
DAMPING_MAX = 1e12  # no step lowers the cost even this damped: a minimum to working precision


@attrs.frozen(eq=False)
class BoundedFit:
    """The solution, its cost, how many times the residuals were evaluated, and why it stopped
    ("converged": a kept step lowered the cost by less than ftol, relative, or none lowers it;
    "evaluations": the budget ran out)."""

    x: np.ndarray
    cost: float
    evaluations: int
    stopped: str


def cauchy_cost(residuals: np.ndarray, scale: float) -> float:
    return float(0.5 * scale**2 * np.log1p((residuals / scale) ** 2).sum())


def solve(residuals: Callable[[np.ndarray], np.ndarray], jacobian: Callable[[np.ndarray], np.ndarray],
          x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, *, scale: float, ftol: float,
          max_evaluations: int) -> BoundedFit:  # fmt: skip
    """Minimise the Cauchy cost (scale f) of residuals(x) for lower <= x <= upper, from x0
    (clipped into the bounds). `jacobian(x)` is asked for at the x of the last `residuals` call."""
    x = np.clip(np.asarray(x0, dtype=np.float64), lower, upper)
    r = residuals(x)
    cost, evaluations, damping = cauchy_cost(r, scale), 1, DAMPING_START
    matrix, gradient, diagonal = _normal_equations(r, jacobian(x), scale)
    while evaluations < max_evaluations:
        step = _bounded_step(matrix, gradient, diagonal, damping, lower - x, upper - x)
        trial = np.clip(x + step, lower, upper)
        r_trial = residuals(trial)
        evaluations += 1
        trial_cost = cauchy_cost(r_trial, scale)
        if trial_cost < cost:
            converged = cost - trial_cost < ftol * cost
            x, cost, damping = trial, trial_cost, max(damping / 3.0, 1e-12)
            if converged:
                return BoundedFit(x, cost, evaluations, "converged")
            matrix, gradient, diagonal = _normal_equations(r_trial, jacobian(x), scale)
        else:
            damping *= 4.0
            if damping > DAMPING_MAX:
                return BoundedFit(x, cost, evaluations, "converged")
    return BoundedFit(x, cost, evaluations, "evaluations")


def _normal_equations(r: np.ndarray, jac: np.ndarray, scale: float):
    """J^T W J, J^T W r and diag(J^T W J) with W the Cauchy loss's slope, 1 / (1 + (r/f)^2)."""
    weight = 1.0 / (1.0 + (r / scale) ** 2)
    weighted = jac * weight[:, None]
    matrix = jac.T @ weighted
    diagonal = np.diag(matrix).copy()
    diagonal[diagonal <= 0] = 1.0  # an unknown nothing depends on is held by the damping alone
    return matrix, weighted.T @ r, diagonal


def _bounded_step(matrix, gradient, diagonal, damping, low, high) -> np.ndarray:
    """argmin 0.5 d^T (M + damping diag) d + g^T d for low <= d <= high: with M + damping diag
    = L L^T, the same as min ||L^T d + L^-1 g||^2, a bounded-variable least-squares problem."""
    factor = scipy.linalg.cholesky(matrix + damping * np.diag(diagonal), lower=True)
    target = -scipy.linalg.solve_triangular(factor, gradient, lower=True)
    return scipy.optimize.lsq_linear(factor.T, target, bounds=(low, high), method="bvls").x
