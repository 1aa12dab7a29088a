"""What to cite for a piece of work done with redundax: the library and the papers
behind the methods a run used (as `diffrax.citation()` does for its solvers)."""

from ._bodies import SpatialBodies
from ._compliant_stepping import GonzalezTrajectory
from ._integration import Trajectory
from ._model import Model
from ._version import __version__
from .drift._baumgarte import Baumgarte
from .drift._step_projection import StepProjection
from .joint_coordinates import JointModel, JointTrajectory
from .methods import AbstractRedundancyMethod, uses_block_solver

_REDUNDAX = """\
@software{{redundax,
  title = {{redundax: differentiable dynamics of redundantly constrained multibody
           systems, with reaction-uniqueness analysis, in {{JAX}}}},
  version = {{{version}}},
  year = {{2026}}
}}"""

_PAPERS = {
    "wojtyra2013": (
        "The test of which reactions are unique (C_X^T Q_X^col, by pivoted QR), the "
        "degree of redundancy and the null-space equations of motion:",
        """\
@article{wojtyra2013solvability,
  author = {Wojtyra, Marek and Fr{\\k{a}}czek, Janusz},
  title = {Solvability of reactions in rigid multibody systems with redundant
           nonholonomic constraints},
  journal = {Multibody System Dynamics}, volume = {30}, pages = {153--171},
  year = {2013}
}""",
    ),
    "kraus2001": (
        "Natural coordinates, the block-sparse O(n) solution and constraint partitioning:",
        """\
@article{kraus2001natural,
  author = {Kraus, C. and Winckler, M. and Bock, H. G.},
  title = {Modeling mechanical {DAE} using natural coordinates},
  journal = {Mathematical and Computer Modelling of Dynamical Systems}, volume = {7}, number = {2},
  pages = {145--158}, year = {2001}
}""",
    ),
    "pekal": (
        "Reaction-uniqueness analysis inside the divide-and-conquer algorithm (joint coordinates):",
        """\
@misc{pekal_dca_uniqueness,
  author = {P{\\k{e}}kal, Marcin and Wojtyra, Marek and Malczyk, Pawe{\\l} and
            Fr{\\k{a}}czek, Janusz},
  title = {Divide-and-conquer-based method for the reaction uniqueness analysis in
           overconstrained multibody systems},
  note = {Extended abstract}
}""",
    ),
    "featherstone1999": (
        "The divide-and-conquer articulated-body algorithm:",
        """\
@article{featherstone1999dca,
  author = {Featherstone, Roy},
  title = {A divide-and-conquer articulated-body algorithm for parallel
           {O}(log(n)) calculation of rigid-body dynamics. {P}art 1: basic algorithm},
  journal = {The International Journal of Robotics Research}, volume = {18}, number = {9},
  pages = {867--875}, year = {1999}
}""",
    ),
    "gonzalez2011": (
        "The semi-implicit stepper with compliant constraints:",
        """\
@inproceedings{gonzalez2011techniques,
  author = {Gonz{\\'a}lez, Francisco and K{\\"o}vecses, J{\\'o}zsef and Teichmann,
            Marek and Courchesne, P.},
  title = {Techniques for the simulation of redundantly constrained multibody systems},
  booktitle = {ECCOMAS Thematic Conference on Multibody Dynamics},
  year = {2011}
}""",
    ),
    "hairer2006": (
        "The projection onto the constraint manifold after every step (Section IV.4):",
        """\
@book{hairer2006geometric,
  author = {Hairer, Ernst and Lubich, Christian and Wanner, Gerhard},
  title = {Geometric Numerical Integration}, edition = {Second},
  publisher = {Springer}, address = {Berlin},
  year = {2006}
}""",
    ),
    "baumgarte1972": (
        "Baumgarte's stabilisation of the constraints:",
        """\
@article{baumgarte1972stabilization,
  author = {Baumgarte, J.},
  title = {Stabilization of constraints and integrals of motion in dynamical systems},
  journal = {Computer Methods in Applied Mechanics and Engineering}, volume = {1}, number = {1},
  pages = {1--16}, year = {1972}
}""",
    ),
}


def _papers(used) -> list[str]:
    """The keys of `_PAPERS` behind the objects `used` (and what they hold)."""
    keys = ["wojtyra2013"]  # every Structure holds its verdicts

    def add(*names):
        keys.extend(name for name in names if name not in keys)

    def visit(obj):
        if isinstance(obj, (JointModel, JointTrajectory)):
            add("pekal", "featherstone1999")
        if isinstance(obj, JointTrajectory):
            visit(obj.drift_control)  # its Baumgarte terms, or None
        if isinstance(obj, GonzalezTrajectory):
            add("gonzalez2011")
        if isinstance(obj, Model) and isinstance(obj.bodies, SpatialBodies):
            add("kraus2001")
        if isinstance(obj, AbstractRedundancyMethod) and (
            uses_block_solver(obj) or type(obj).partitions
        ):
            add("kraus2001")
        if isinstance(obj, StepProjection):
            add("hairer2006")
            if obj.baumgarte is not None:
                add("baumgarte1972")
        if isinstance(obj, Baumgarte):
            add("baumgarte1972")
        if isinstance(obj, Trajectory):
            visit(obj.drift_control)
            if obj.active_set is not None:  # a partitioning method's run
                add("kraus2001")

    for obj in used:
        visit(obj)
    return keys


def citation(*used) -> str:
    """The BibTeX of redundax and of the papers behind the methods a piece of work
    used, printed and returned.

    **Arguments:** any of the objects a run used — its trajectory (absolute or joint
    coordinates, or González's stepper), model, method, drift control. With none:
    redundax and the solvability test every analysis makes.

    **Returns:** the BibTeX text (also printed). The integrator is Diffrax's: cite it
    with `diffrax.citation(solver=...)`.

    !!! example
        ```python
        traj = rx.simulate(model, state0, 2.0)
        rx.citation(traj, rx.methods.NullSpace())
        ```
    """
    lines = [
        "% --- References for this use of redundax (redundax.citation) ---",
        "% The library:",
        _REDUNDAX.format(version=__version__),
    ]
    for key in _papers(used):
        why, bib = _PAPERS[key]
        lines += ["", f"% {why}", bib]
    lines += ["", "% The integrator: see diffrax.citation(solver=...)."]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    return text
