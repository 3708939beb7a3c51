"""Analysis of stored results: profiles over distance, decrease-per-mile with a Hoeffding bound,
communication balance ratio, calibration of model parameters, comparison tables."""

from longhaul.analysis.balance import balance_ratios
from longhaul.analysis.calibrate import MODELS, FitResult, fit, window_model
from longhaul.analysis.compare import comparison_table, load_published, rel_err, scalar_points
from longhaul.analysis.dpm import decrease_per_mile, hoeffding_halfwidth
from longhaul.analysis.profiles import distance_profile, miles_from_delay_us, stability_profile

__all__ = [
    "balance_ratios", "MODELS", "FitResult", "fit", "window_model", "comparison_table", "load_published",
    "rel_err", "scalar_points", "decrease_per_mile", "hoeffding_halfwidth", "distance_profile",
    "miles_from_delay_us", "stability_profile",
]
