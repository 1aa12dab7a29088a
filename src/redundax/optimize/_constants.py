"""Constants shared by the parts of [`redundax.optimize`][]."""

import optax

FORMAT = "redundax design 1"
"""The `format` entry of `design.json`."""

OBJECTIVES = ("peak-reaction", "reaction-impulse")
"""The kinds of objective term."""

QUANTITIES = {"peak-reaction": "smooth peak", "reaction-impulse": "impulse"}
"""What the value of each kind of objective term is called, everywhere (the console,
`history.csv`, `design.json`): a peak-reaction term's value is its *smooth peak* (a
power mean over the saved states); its *peak* is the sampled maximum."""

OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd, "adabelief": optax.adabelief}
"""Optax optimisers by the name a design file gives."""

_DESIGN_KEYS = (
    "mechanism", "optimizer", "learning_rate", "steps", "tolerance", "max_rejections",
    "t_final", "n_save", "rtol", "atol", "variables", "objective", "assembly",
)  # fmt: skip
_VARIABLE_KEYS = ("name", "unit", "addresses", "initial", "lower", "upper", "scale")
_TERM_KEYS = ("type", "pair", "component", "order", "weight")
_ASSEMBLY_KEYS = ("min_singular_ratio", "weight")
