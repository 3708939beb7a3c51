"""Calibration: least-squares fit of a model's free parameters to measured points, with uncertainty.

``fit(model, params0, x, y)`` works with any Python callable ``model(params, x) -> y`` where
``params`` is a dict {name: float} and ``x`` whatever the model understands (an array of message
sizes and delays, a list of scenario dicts for the simulator, ...). The fit is scipy's bounded
least squares (trust-region reflective) on the (optionally weighted) residuals with a
central-difference Jacobian.

Uncertainty: the covariance of the estimates is ``s^2 (J^T J)^-1`` at the optimum, with
``s^2 = RSS / (n - p)`` (the residual variance; or 1 when absolute ``sigma`` are given), and the
standard errors are the square roots of its diagonal. Predictions carry the delta-method standard
error ``sqrt(g^T C g)`` with ``g`` the gradient of the prediction in the parameters. These are the
usual local (linearised) uncertainties: they assume the model is right, the residuals independent
with constant spread, and the fit not stuck at a bound. A parameter the points do not constrain
at all (the model does not change with it there) is reported with an infinite standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

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
    #: residual evaluations the solver made (its Jacobian's are not counted)
    evaluations: int
    converged: bool
    residuals: np.ndarray = field(repr=False)
    model: Model = field(repr=False)
    bounds: dict = field(repr=False, default_factory=dict)
    #: for each parameter the points do not determine, the others it moves with along a direction
    #: the model does not change in ([] when no measurement depends on it at all)
    tied: dict[str, list[str]] = field(default_factory=dict)

    def table(self) -> list[dict]:
        """One row per parameter; ``stderr`` is None (and ``constrained`` False) for a parameter the
        points do not determine."""
        rows = []
        for k in self.names:
            se, v = self.stderr[k], self.values[k]
            ok = math.isfinite(se)
            rows.append({"param": k, "value": v, "stderr": se if ok else None,
                         "rel_stderr_pct": (100 * se / abs(v) if v else None) if ok else None, "constrained": ok})
        return rows

    def predict(self, x) -> tuple[np.ndarray, np.ndarray]:
        """(prediction, its standard error by the delta method) at new x."""
        p = np.array([self.values[k] for k in self.names])
        y = _eval(self.model, self.names, p, x)
        G = _jacobian(self.model, self.names, p, x, y)
        # A prediction that moves with an unconstrained parameter has no finite error either.
        fin = np.isfinite(np.diag(self.covariance))
        C = self.covariance[np.ix_(fin, fin)]
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", G[:, fin], C, G[:, fin]), 0.0))
        se[np.any(np.abs(G[:, ~fin]) > 1e-12 * np.maximum(np.abs(y)[:, None], 1e-300), axis=1)] = np.inf
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


def _covariance(J: np.ndarray, s2: float) -> tuple[np.ndarray, list[list[int]]]:
    """s^2 (J^T J)^-1, with infinite variance for every parameter the points do not constrain, and
    for each parameter the others it shares such a direction with.

    A direction of parameter space along which the model does not change at the optimum (a
    window limit no measurement reaches, two costs that only ever appear summed) is a null
    singular vector of J; a parameter with a component along one has no finite uncertainty -
    say so rather than print a pseudo-inverse's zero.
    """
    k = J.shape[1]
    _, sv, vt = np.linalg.svd(J, full_matrices=True)
    sv = np.concatenate([sv, np.zeros(k - sv.size)])
    null = sv <= 1e-9 * max(float(sv.max(initial=0.0)), 1e-300)
    inv_sv2 = np.where(null, 0.0, 1.0 / np.where(null, 1.0, sv) ** 2)
    cov = (vt.T * inv_sv2) @ vt * s2
    along = np.abs(vt[null]) > 1e-6   # (null directions, parameters)
    unconstrained = np.any(along, axis=0) if null.any() else np.zeros(k, dtype=bool)
    cov[unconstrained, :] = np.inf
    cov[:, unconstrained] = np.inf
    tied = [sorted({int(j) for d in along if d[i] for j in np.flatnonzero(d) if j != i}) for i in range(k)]
    return cov, tied


def fit(model: Model, params0: Mapping[str, float], x, y: ArrayLike, sigma: ArrayLike | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None, max_evaluations: int = 2000,
        tol: float = 1e-10) -> FitResult:
    """Least-squares fit of ``model``'s parameters (start at ``params0``) to points (x, y).

    ``sigma``: per-point standard deviations (weights 1/sigma^2, taken as absolute). ``bounds``:
    {name: (lo, hi)} the solver keeps (a start outside is clipped in). Fewer points than
    parameters + 1 -> UserError.
    """
    names = list(params0)
    ys = np.asarray(y, dtype=float).reshape(-1)
    n, k = ys.size, len(names)
    if k == 0:
        raise UserError("calibration: the model has no free parameters to fit")
    if n < k + 1:
        raise UserError(f"calibration: {n} measured point(s) for {k} free parameter(s); need at least {k + 1} "
                        "(one more than the parameters, to estimate the uncertainty)")
    if not np.all(np.isfinite(ys)):
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
        return (ys - yp) * w

    if not np.all(np.isfinite(resid(p))):
        raise UserError(f"calibration: the model gives NaN or infinity at the start values {dict(zip(names, p.tolist()))}")
    from scipy.optimize import least_squares  # here: every `longhaul analyse` command imports this module

    # Trust-region reflective least squares (it keeps the bounds); x_scale="jac" lets parameters
    # of very different magnitude (seconds per byte next to microseconds) share one trust region.
    sol = least_squares(resid, p, jac="3-point", bounds=(lo, hi), method="trf", x_scale="jac",
                        ftol=tol, xtol=tol, gtol=tol, max_nfev=max_evaluations)
    p = sol.x
    y0 = ys - sol.fun / w
    J = sol.jac  # d(residual)/dp at the optimum, weighted; its sign does not matter to J^T J
    dof = n - k
    s2 = 1.0 if sigma is not None else float(sol.fun @ sol.fun) / dof
    cov, tied = _covariance(J, s2)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    resid_raw = ys - y0
    tss = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1 - float((resid_raw**2).sum()) / tss if tss > 0 else math.nan  # undefined for constant data
    return FitResult(names=names, values=dict(zip(names, map(float, p))), stderr=dict(zip(names, map(float, se))),
                     covariance=cov, rss=float((resid_raw**2).sum()), dof=dof, r2=r2, n=n, evaluations=sol.nfev,
                     converged=bool(sol.success), residuals=resid_raw, model=model, bounds=bounds,
                     tied={names[i]: [names[j] for j in tied[i]] for i in range(k) if not math.isfinite(se[i])})


# --------------------------------------------------------------------------- built-in models
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


def tcp_stack_model(params: Mapping[str, float], x) -> np.ndarray:
    """Aggregate throughput of N bulk TCP streams, limited by the link, the host stack or the window.

    x: array (n, 3) of (delay_us, streams, mss_bytes). Parameters with physical meaning (the
    simulator's ``HostStack`` and window settings, so fitted values carry over to a profile):
      ``link_MBps``          data rate of the narrowest link,
      ``stack_per_seg_us``   CPU time per segment on the busiest core (system call share, TCP/IP,
                             driver, interrupt) - the per-packet stack cost,
      ``stack_per_byte_ns``  CPU time per payload byte (copies, software checksum) - the per-byte
                             stack cost; separable from the per-segment cost only when the
                             measurements span more than one MSS,
      ``window_bytes``       the largest window one stream reaches (socket buffer limit),
      ``base_rtt_us``        round trip at zero added delay (hosts, switches, stack latency).
    The stack can move one MSS per (per_seg + MSS * per_byte) on one core, whatever the number
    of streams (they share the core); each stream moves at most window / RTT with
    RTT = base_rtt + 2 * delay. Throughput = min(link, stack, streams * window / RTT).
    """
    x = np.asarray(x, dtype=float).reshape(-1, 3)
    d, n, mss = x[:, 0], x[:, 1], x[:, 2]
    link = max(params["link_MBps"], 1e-9)
    per_seg_us = params["stack_per_seg_us"] + mss * params.get("stack_per_byte_ns", 0.0) / 1000.0
    stack = mss / np.maximum(per_seg_us, 1e-12)
    rtt_us = np.maximum(params["base_rtt_us"] + 2 * d, 1e-9)
    window = n * max(params["window_bytes"], 1.0) / rtt_us
    return np.minimum(np.minimum(link, stack), window)


def tcp_stack_start(x: np.ndarray, y: np.ndarray) -> dict:
    """A starting point for ``tcp_stack_model`` read off the data (the model is a minimum of
    three limits, so a fit started far away can settle on the wrong limit). Stack: at the
    smallest delay, MSS / bw against MSS is a line of intercept per_seg and slope per_byte.
    Window: the lowest per-stream rate at the largest delay times its round trip."""
    d, n, mss = x[:, 0], x[:, 1], x[:, 2]
    near = d == d.min()
    sizes = np.unique(mss[near])
    t_seg = np.array([s / max(y[near & (mss == s)].max(), 1e-9) for s in sizes])   # us per segment
    if sizes.size >= 2:
        per_byte_us, per_seg_us = np.polyfit(sizes, t_seg, 1)
    else:
        per_byte_us, per_seg_us = 0.0, float(t_seg[0])
    far = d == d.max()
    i = np.flatnonzero(far)[np.argmin(y[far] / n[far])]
    base_rtt_us = 50.0
    return {"link_MBps": float(y.max()) * 1.02, "stack_per_seg_us": max(float(per_seg_us), 0.0),
            "stack_per_byte_ns": max(float(per_byte_us) * 1000.0, 0.0), "base_rtt_us": base_rtt_us,
            "window_bytes": float(y[i] / n[i] * (base_rtt_us + 2 * d[i]))}


@dataclass(frozen=True)
class CalibrationModel:
    """A built-in model for ``longhaul analyse calibrate``: the function, where each parameter
    starts and may go, and which record columns make up one x row (with defaults for missing ones)."""
    fn: Model
    params0: dict
    bounds: dict
    columns: tuple[str, ...]
    column_defaults: dict = field(default_factory=dict)
    #: parameters that cannot be told apart unless this column takes more than one value
    needs_spread: dict = field(default_factory=dict)
    #: other names a column has in some records (an ingested tool's name for it)
    aliases: dict = field(default_factory=dict)
    #: data-driven starting point(s) tried besides params0; the fit with the least RSS wins
    start: Callable | None = None
    #: configuration columns that may vary within one fit because they only move a column above
    #: (the MTU sets the MSS); any other varying one (transport, cc, ...) makes the fit refused
    varies_through_columns: tuple[str, ...] = ()


MODELS = {
    "window": CalibrationModel(
        window_model, {"link_MBps": 900.0, "per_msg_us": 1.0, "window_msgs": 16.0},
        {"link_MBps": (1.0, 1e6), "per_msg_us": (0.0, 1e6), "window_msgs": (1.0, 1e6)},
        columns=("size_bytes", "delay_us")),
    "tcp-stack": CalibrationModel(
        tcp_stack_model,
        {"link_MBps": 1000.0, "stack_per_seg_us": 5.0, "stack_per_byte_ns": 0.2, "window_bytes": 4e6,
         "base_rtt_us": 50.0},
        {"link_MBps": (1.0, 1e6), "stack_per_seg_us": (0.0, 1e4), "stack_per_byte_ns": (0.0, 1e3),
         "window_bytes": (1e3, 1e10), "base_rtt_us": (0.0, 1e6)},
        columns=("delay_us", "streams", "mss_bytes"),
        # iperf3 runs of one stream may omit these; 1448 = 1500-byte MTU minus IP/TCP headers with timestamps
        column_defaults={"streams": 1.0, "mss_bytes": 1448.0},
        needs_spread={"stack_per_byte_ns": "mss_bytes"},
        aliases={"mss_bytes": "tcp_mss_bytes"},   # iperf3 -J's name (longhaul ingest)
        start=tcp_stack_start,
        varies_through_columns=("mtu_bytes",)),
}
