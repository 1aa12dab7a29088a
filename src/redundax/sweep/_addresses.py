"""The parameter addresses of [`redundax.sweep`][] now live in `redundax._parameters`,
shared with [`redundax.optimize`][]; this module keeps the old import path."""

from .._parameters import (
    Rule as Rule,
    Target as Target,
    apply_parameters as apply_parameters,
    parameter_targets as parameter_targets,
    resolve_parameters as resolve_parameters,
    unknown_parameter as unknown_parameter,
)
