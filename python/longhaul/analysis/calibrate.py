"""Calibration: least-squares fit of a model's free parameters to measured points, with uncertainty.

``fit(model, params0, x, y)`` works with any Python callable ``model(params, x) -> y`` where
``params`` is a dict {name: float} and ``x`` whatever the model understands (an array of message
sizes and delays, a list of scenario dicts for the simulator, ...). The fit is Levenberg-Marquardt
on the (optionally weighted) residuals with a central-difference Jacobian, in numpy only.

Uncertainty: the covariance of the estimates is ``s^2 (J^T J)^-1`` at the optimum, with
``s^2 = RSS / (n - p)`` (the residual variance; or 1 when absolute ``sigma`` are given), and the
standard errors are the square roots of its diagonal. Predictions carry the delta-method standard
error ``sqrt(g^T C g)`` with ``g`` the gradient of the prediction in the parameters. These are the
usual local (linearised) uncertainties: they assume the model is right, the residuals independent
with constant spread, and the fit not stuck at a bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from longhaul.errors import UserError

Model = Callable[[dict, object], "np.ndarray"]


@dataclass
class FitResult:
    names: list[str]
    values: dict[str, float]
    stderr: dict[str, float]
    covariance: np.ndarray
    rss: float
    dof: int
    r2: float
    n: int
    iterations: int
    converged: bool
    residuals: np.ndarray = field(repr=False)
    model: Model = field(repr=False, default=None)
    bounds: dict = field(repr=False, default_factory=dict)

    def table(self) -> list[dict]:
        return [{"param": k, "value": self.values[k], "stderr": self.stderr[k],
                 "rel_stderr_pct": 100 * self.stderr[k] / abs(self.values[k]) if self.values[k] else math.inf}
                for k in self.names]

    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(prediction, its standard error by the delta method) at new x."""
        p = np.array([self.values[k] for k in self.names])
        y = _eval(self.model, self.names, p, x)
        G = _jacobian(self.model, self.names, p, x, y)
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", G, self.covariance, G), 0.0))
        return y, se


def _eval(model: Model, names: Sequence[str], p: np.ndarray, x) -> np.ndarray:
    y = np.asarray(model(dict(zip(names, (float(v) for v in p))), x), dtype=float)
    return y.reshape(-1)


def _jacobian(model: Model, names, p: np.ndarray, x, y0: np.ndarray) -> np.ndarray:
    J = np.empty((y0.size, p.size))
    for j in range(p.size):
        h = 1e-6 * max(abs(p[j]), 1e-3)
        pp, pm = p.copy(), p.copy()
        pp[j] += h
        pm[j] -= h
        J[:, j] = (_eval(model, names, pp, x) - _eval(model, names, pm, x)) / (2 * h)
    return J


def fit(model: Model, params0: Mapping[str, float], x, y: Sequence[float], sigma: Sequence[float] | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None, max_iter: int = 200, tol: float = 1e-10) -> FitResult:
    """Least-squares fit of ``model``'s parameters (start at ``params0``) to points (x, y).

    ``sigma``: per-point standard deviations (weights 1/sigma^2, taken as absolute). ``bounds``:
    {name: (lo, hi)} kept by clipping. Fewer points than parameters + 1 -> UserError.
    """
    names = list(params0)
    y = np.asarray(y, dtype=float).reshape(-1)
    n, k = y.size, len(names)
    if k == 0:
        raise UserError("calibration: the model has no free parameters to fit")
    if n < k + 1:
        raise UserError(f"calibration: {n} measured point(s) for {k} free parameter(s); need at least {k + 1} "
                        "(one more than the parameters, to estimate the uncertainty)")
    if not np.all(np.isfinite(y)):
        raise UserError("calibration: measured values contain NaN or infinity")
    w = np.ones(n) if sigma is None else 1.0 / np.asarray(sigma, dtype=float).reshape(-1)
    if w.size != n or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise UserError("calibration: sigma must give one positive finite value per point")
    bounds = dict(bounds or {})
    lo = np.array([bounds.get(nm, (-np.inf, np.inf))[0] for nm in names])
    hi = np.array([bounds.get(nm, (-np.inf, np.inf))[1] for nm in names])
    p = np.clip(np.array([float(params0[nm]) for nm in names]), lo, hi)

    def resid(pv):
        yp = _eval(model, names, pv, x)
        if yp.size != n:
            raise UserError(f"calibration: the model returned {yp.size} values for {n} points")
        return (y - yp) * w

    r = resid(p)
    cost = float(r @ r)
    lam = 1e-3
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        y0 = _eval(model, names, p, x)
        J = _jacobian(model, names, p, x, y0) * w[:, None]  # d(model)/dp, weighted
        A = J.T @ J
        g = J.T @ r
        improved = False
        for _ in range(30):
            step = np.linalg.solve(A + lam * np.diag(np.maximum(np.diag(A), 1e-12)), g) if A.size else g
            pn = np.clip(p + step, lo, hi)
            rn = resid(pn)
            cn = float(rn @ rn)
            if cn < cost:
                improved = True
                break
            lam *= 10
        if not improved:
            converged = True
            break
        rel = (cost - cn) / max(cost, 1e-300)
        p, r, cost = pn, rn, cn
        lam = max(lam / 10, 1e-12)
        if rel < tol or np.max(np.abs(step) / np.maximum(np.abs(p), 1e-12)) < 1e-10:
            converged = True
            break
    y0 = _eval(model, names, p, x)
    J = _jacobian(model, names, p, x, y0) * w[:, None]
    dof = n - k
    s2 = 1.0 if sigma is not None else cost / dof
    try:
        cov = np.linalg.inv(J.T @ J) * s2
    except np.linalg.LinAlgError:
        cov = np.linalg.pinv(J.T @ J) * s2
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    resid_raw = y - y0
    tss = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((resid_raw**2).sum()) / tss if tss > 0 else 1.0
    return FitResult(names=names, values=dict(zip(names, map(float, p))), stderr=dict(zip(names, map(float, se))),
                     covariance=cov, rss=float((resid_raw**2).sum()), dof=dof, r2=r2, n=n, iterations=it,
                     converged=converged, residuals=resid_raw, model=model, bounds=bounds)


# --------------------------------------------------------------------------- a built-in model
def window_model(params: Mapping[str, float], x) -> np.ndarray:
    """Bandwidth of a message stream with a limited number of messages in flight over a delayed link.

    x: array (n, 2) of (size_bytes, delay_us). Parameters with physical meaning:
      ``link_MBps``   data rate of the narrowest link (bytes/us = MB/s),
      ``per_msg_us``  fixed cost per message at the sender (posting, completion),
      ``window_msgs`` messages allowed in flight (credits / send queue depth).
    One message occupies the link for s/link; the sender is limited to one message per
    (per_msg + s/link); a window of W messages is replenished once per round trip
    (2 * delay + per_msg + s/link). Bandwidth = s / max(per_msg + s/link, (2 delay + per_msg + s/link) / W).
    """
    x = np.asarray(x, dtype=float).reshape(-1, 2)
    s, d = x[:, 0], x[:, 1]
    link = max(params["link_MBps"], 1e-9)
    t_msg = params["per_msg_us"] + s / link
    window = max(params["window_msgs"], 1e-9)
    t_eff = np.maximum(t_msg, (2 * d + t_msg) / window)
    return s / t_eff


MODELS = {
    "window": (window_model, {"link_MBps": 900.0, "per_msg_us": 1.0, "window_msgs": 16.0},
               {"link_MBps": (1.0, 1e6), "per_msg_us": (0.0, 1e6), "window_msgs": (1.0, 1e6)}),
}
