"""The surface fit's last-stage solver (`body.bounded_gauss_newton`): the bounded optimum of a
linear problem, variables that start on their bound, Cauchy's loss against outliers, and an
honest reason for stopping."""

from __future__ import annotations

import numpy as np
import scipy.optimize

from maskscore_core.body import bounded_gauss_newton


def linear(matrix, target):
    return (lambda x: matrix @ x - target), (lambda x: matrix)


def test_a_linear_problem_reaches_its_bounded_optimum():
    """With a scale far above the residuals Cauchy's loss is plain least squares, so the result is
    the bounded linear least-squares solution (scipy's BVLS), active bounds included."""
    rng = np.random.default_rng(0)
    matrix, target = rng.normal(size=(40, 6)), rng.normal(size=40) * 3
    lower, upper = np.full(6, -0.2), np.full(6, 0.2)
    expected = scipy.optimize.lsq_linear(matrix, target, bounds=(lower, upper), method="bvls").x
    fit = bounded_gauss_newton.solve(*linear(matrix, target), np.zeros(6), lower, upper, scale=1e4, ftol=1e-12,
                                     max_evaluations=100)  # fmt: skip
    assert fit.stopped == "converged"
    assert np.abs(fit.x - expected).max() < 1e-6
    assert np.any(np.isclose(np.abs(expected), 0.2))  # the test holds a bound active


def test_variables_on_their_bound_move_when_the_problem_asks():
    """Twenty unknowns in [0, 1], all starting at 0; the residuals want one of them at 0.9 and the
    others below 0. That one reaches 0.9 and the others stay on the bound."""
    matrix, target = np.eye(20), np.full(20, -0.5)
    target[7] = 0.9
    fit = bounded_gauss_newton.solve(*linear(matrix, target), np.zeros(20), np.zeros(20), np.ones(20), scale=10.0,
                                     ftol=1e-10, max_evaluations=50)  # fmt: skip
    assert abs(fit.x[7] - 0.9) < 1e-6
    assert np.all(np.delete(fit.x, 7) == 0.0)


def test_cauchy_loss_discounts_outliers():
    """A line through 50 points, 5 of them thrown 100 units off: Cauchy's loss at scale 1 finds
    the line within 0.05, where plain least squares is pulled by more."""
    rng = np.random.default_rng(1)
    t = np.linspace(0, 1, 50)
    y = 2.0 * t + 1.0 + rng.normal(0, 0.05, 50)
    y[::10] += 100.0
    design = np.stack([t, np.ones_like(t)], axis=1)
    bounds = np.full(2, -np.inf), np.full(2, np.inf)
    fit = bounded_gauss_newton.solve(*linear(design, y), np.zeros(2), *bounds, scale=1.0, ftol=1e-12, max_evaluations=200)
    plain = np.linalg.lstsq(design, y, rcond=None)[0]
    assert np.abs(fit.x - [2.0, 1.0]).max() < 0.05
    assert np.abs(plain - [2.0, 1.0]).max() > 1.0


def test_the_cost_never_rises_and_a_spent_budget_says_so():
    """Every kept step lowers the true cost, so the result is never worse than the start; a run
    cut short by its budget reports "evaluations", not "converged"."""
    rng = np.random.default_rng(2)
    matrix = rng.normal(size=(30, 4))

    def residuals(x):
        return np.sin(matrix @ x) * 3.0 - 1.0

    def jacobian(x):
        return (np.cos(matrix @ x) * 3.0)[:, None] * matrix

    start = rng.normal(size=4)
    bounds = np.full(4, -2.0), np.full(4, 2.0)
    start_cost = bounded_gauss_newton.cauchy_cost(residuals(start), 0.5)
    short = bounded_gauss_newton.solve(residuals, jacobian, start, *bounds, scale=0.5, ftol=1e-14, max_evaluations=2)
    assert short.stopped == "evaluations" and short.evaluations == 2
    full = bounded_gauss_newton.solve(residuals, jacobian, start, *bounds, scale=0.5, ftol=1e-14, max_evaluations=500)
    assert full.cost <= short.cost <= start_cost
    assert full.cost == bounded_gauss_newton.cauchy_cost(residuals(full.x), 0.5)
    assert np.all((full.x >= -2.0) & (full.x <= 2.0))
