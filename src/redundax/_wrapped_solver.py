"""A Diffrax solver that delegates everything to the solver it wraps; subclasses
override `init`/`step` to act around each step (the active-set monitor, the
projection after every step)."""

import abc
import functools

import diffrax
import equinox as eqx


class AbstractDelegatingSolver(diffrax.AbstractWrappedSolver):
    """Steps, orders, interpolation and term structure of `solver`, unchanged."""

    solver: eqx.AbstractVar[diffrax.AbstractSolver]

    @property
    def root_finder(self):
        """The wrapped implicit solver's root finder: Diffrax forwards `isinstance`
        checks through a wrapper, so it takes the wrapper of an implicit solver for
        one and fills in the root finder's tolerances from the step-size controller
        (`eqx.tree_at` reaches the wrapped solver's fields through this property)."""
        return self.solver.root_finder  # pyright: ignore

    @property
    def root_find_max_steps(self):
        """The wrapped implicit solver's limit on root-finding steps."""
        return self.solver.root_find_max_steps  # pyright: ignore

    @property
    def term_structure(self):
        return self.solver.term_structure

    @property
    def interpolation_cls(self):  # pyright: ignore
        return self.solver.interpolation_cls

    @property
    def term_compatible_contr_kwargs(self):
        return self.solver.term_compatible_contr_kwargs

    def order(self, terms):
        return self.solver.order(terms)

    def strong_order(self, terms):
        return self.solver.strong_order(terms)

    def error_order(self, terms):
        return self.solver.error_order(terms)

    def init(self, terms, t0, t1, y0, args):
        return self.solver.init(terms, t0, t1, y0, args)

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        return self.solver.step(terms, t0, t1, y0, args, solver_state, made_jump)

    def func(self, terms, t0, y0, args):
        return self.solver.func(terms, t0, y0, args)


class AbstractMonitor(AbstractDelegatingSolver):
    """A solver that steps like `solver` and keeps a log (the second half of its
    solver state; Diffrax keeps the state of accepted steps only): after every
    step, `log.record(t0, t1, self.observe(args, t1, y1))`. `log`: the log to
    continue (a run integrated save interval by save interval continues one)."""

    log: eqx.AbstractVar[eqx.Module]

    @abc.abstractmethod
    def observe(self, args, t, y):
        """What the log records of the state `y` at the end `t` of a step."""

    def init(self, terms, t0, t1, y0, args):
        return self.solver.init(terms, t0, t1, y0, args), self.log

    def step(self, terms, t0, t1, y0, args, solver_state, made_jump):
        state, log = solver_state
        y1, error, dense, state, result = self.solver.step(
            terms, t0, t1, y0, args, state, made_jump
        )
        return y1, error, dense, (state, log.record(t0, t1, self.observe(args, t1, y1))), result


@functools.cache
def _implicit(cls: type) -> type:
    """`cls` that is also a `diffrax.AbstractImplicitSolver` (same name)."""
    return type(cls.__name__, (cls, diffrax.AbstractImplicitSolver), {"__module__": cls.__module__})


def around(cls: type, solver: diffrax.AbstractSolver, *fields):
    """`cls(solver, *fields)`: a delegating wrapper of `solver`, itself an implicit
    solver when `solver` is one. Diffrax forwards `isinstance` through one wrapper
    only; a monitor around the projection around `diffrax.Kvaerno5()` would
    otherwise not be taken for an implicit solver, and its root finder would not
    get the step-size controller's tolerances."""
    if isinstance(solver, diffrax.AbstractImplicitSolver):
        cls = _implicit(cls)
    return cls(solver, *fields)
