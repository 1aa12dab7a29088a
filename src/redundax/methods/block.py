"""Block-sparse solution of the equations of motion with constraint partitioning
(Kraus, Winckler & Bock 2001, §6 and §8).

M q̈ + Cᵀ μ = F, C q̈ = Γ is solved through the Schur complement over the
constraint blocks, S μ = C M⁻¹ F − Γ with S = C M⁻¹ Cᵀ, q̈ = M⁻¹ (F − Cᵀ μ):

1. M⁻¹ body by body (M is block diagonal in absolute and natural coordinates);
2. S only in the blocks of its pattern (two constraint blocks couple only through
   a common moving body), factorised S = L D Lᵀ block by block in the order the
   [`BlockPattern`][redundax.internal.BlockPattern] fixed on the host (every body's
   rigid-body rows first, then the pairs), with fill-in only where its symbolic
   factorisation put it: none for chains, trees and loops through the ground
   (the 6-bar, Bricard, IFToMM A02's chains), along the loop for a loop off the
   ground (a ring of n bodies hung from the ground by one: n − 3 blocks, at
   bandwidth 2 planar, 3 spatial). Every block is
   padded to one size and every step to one number of coupled blocks, so the
   factorisation is one `lax.scan` of small dense products in pure `jax.numpy`:
   no LAPACK call, so `vmap` turns it into wide array arithmetic and `grad` flows
   through it, and the work grows linearly with the number of blocks at fixed
   coupling (measured: `experiments/bench_scaling.py`);
3. **constraint partitioning inside the factorisation**: within each diagonal
   block the LDLᵀ pivots are monitored; a pivot at or below `pivot_rtol` times the
   row's own S_jj (the row is, to that accuracy, a combination of rows eliminated
   before it) drops the row: its multiplier is set to zero and it takes no
   further part, which is eliminating that constraint (Kraus et al. §8), with no
   restart. Only the pairs' rows are monitored: a body's six rigid-body rows
   (natural coordinates) are eliminated before every pair and keep their full
   weight whatever their pivot, the pattern's order or `pivot_rtol` ("keep the
   rigid body constraints in the active set all the time ... monitor each
   diagonal joint block only", §8); they are independent of each other wherever
   the body's axes are. A row whose pivot is less than `SOFT_DECADES` above the threshold is
   enforced softly (a compliant constraint whose compliance grows to infinity at
   the threshold), so that q̈ stays a C¹ function of the state when a row leaves
   or joins. The pivots are those of C M⁻¹ Cᵀ itself where M is well
   conditioned; with slender or flat bodies or very unequal masses, those of
   C Cᵀ (a second factorisation chooses the rows: `MASS_PIVOTS_MAX_CONDITION`).
   The rows kept are the *active set* (`BlockSolution.active`); it may change
   from one state to the next, and `simulate` records every change
   ([`ActiveSetLog`][redundax.monitors.ActiveSetLog]).
4. one step of iterative refinement on the residuals of the full equations, with
   the same factors: the Schur complement squares the conditioning of C M^-1/2,
   and the step restores the accuracy of a backward-stable solve.

q̈ is the unique constrained acceleration (every exact method's); μ is one
particular set of multipliers, zero on the dropped rows, and the reactions the
[`Structure`][redundax.Structure] flags unique equal every other method's.

Two forms of the same solve (`BlockSparse.form`):

- `"descriptor"` (default): the full descriptor form, Kraus et al. Eq. (1): every
  body's 12 natural coordinates, and its rigid-body rows as one more constraint
  block of S;
- `"null-space"`: Kraus et al. §6, "by using a null-space method and exploiting
  the very simple structure of the transformed and constant matrix G_RC D": each
  body's rigid-body rows G are eliminated by the basis V = D(p) N̄ of their null
  space (G D = Ḡ is constant, Eq. (10), so N̄ is a constant 12 × 6 matrix), and S
  holds the pairs' rows alone, in 6 coordinates per body with the 6 × 6 reduced
  masses Vᵀ M V (`redundax.methods._block_null_space` gives the math). The same
  q̈ and the same active rows at regular states; the rigid-body rows are never in
  the partitioning at all, and their multipliers come from each body's balance. A
  pair row's relative pivot is then taken against its part that the rigid-body
  rows leave (its S_jj after them), not its whole S_jj: near a singular
  configuration a nearly dependent row is dropped a little later than in the
  descriptor form. Planar bodies (absolute coordinates) have no rigid-body rows:
  there the null-space form is the descriptor form, the same program.

Measured per right-hand side, assembly included, on one core of a 2-core CPU
(`experiments/bench_block_forms.py`, two runs): the null-space form is 1.7–2.3×
as fast on IFToMM A02's spatial chains (N = 4 … 256; at N = 64, 4.4 ms against
2.1 ms), 1.5–2.4× on the 6-bar, 1.7× on the hexapod: Kraus et al.'s "factor of
two". Its elimination has fewer, smaller steps (A02, N = 16: 49 steps of 5 rows
coupled to at most 2 later ones, 112 blocks of S, against 82 of 6 rows, 3 and
226), whose arithmetic is 6× smaller; the steps' fixed cost in the `lax.scan`
and the transformation to the bases (20–30 % of the null-space solve on A02,
N = 16) keep the gain near 2.
"""

from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Bool

from .._equations import LocalTerms, Terms, local_terms
from .._structure import Structure
from ._base import AbstractRedundancyMethod
from ._block_kernel import (
    ENTRY_CHUNK as ENTRY_CHUNK,
    FORMS as FORMS,
    MASS_PIVOTS_MAX_CONDITION as MASS_PIVOTS_MAX_CONDITION,
    PIVOT_RTOL as PIVOT_RTOL,
    PIVOTS as PIVOTS,
    SOFT_DECADES as SOFT_DECADES,
    SUPERNODE_ROWS as SUPERNODE_ROWS,
    BlockSolution as BlockSolution,
    block_solution as block_solution,
    block_solve as block_solve,
    mass_conditioned as mass_conditioned,
    mass_pivots as mass_pivots,
    null_space_block_solve as null_space_block_solve,
    row_pivots as row_pivots,
)


class BlockSparse(AbstractRedundancyMethod):
    """The block-sparse solution with constraint partitioning (module docstring):
    linear in the number of bodies for chains and trees, with fill-in along each
    closed loop off the ground. q̈ equals the null-space method's; the
    multipliers are those of the rows kept active (zero on the dropped, dependent
    rows), so the reactions flagged unique are the same as every method's.

    - `pivot_rtol`: the partitioning's pivot threshold (default `PIVOT_RTOL`).
    - `pivots`: the metric in which the pivots are tested. `"mass"`: those of
      C M⁻¹ Cᵀ, the matrix factorised (Kraus et al.); `"coordinates"`: those of
      C Cᵀ, the metric of the structure's rank (a second factorisation, for the
      rows' choice only: a right-hand side costs 1.4–1.8× as much), right
      whatever the inertia; None (default): `"mass"` where M's condition number
      is at most `MASS_PIVOTS_MAX_CONDITION`, else `"coordinates"`, from the
      model's static `MassFacts` (`redundax._bodies`) (taken when it was built;
      [`specialise`][redundax.methods.specialise] fixes it before a run).
    - `form`: `"descriptor"` (default) factorises every body's rigid-body rows with
      the pairs'; `"null-space"` eliminates them body by body first (Kraus et al.
      §6; module docstring): the same q̈, the pairs' rows alone in S, about twice
      as fast (module docstring). Planar models: the same as `"descriptor"`.

    In `simulate` it assembles only [`LocalTerms`][redundax.equations.LocalTerms] (no dense
    C or M: O(n) memory); given dense [`Terms`][redundax.equations.Terms] it reads C's blocks from
    them.
    """

    pivot_rtol: float = eqx.field(static=True, default=PIVOT_RTOL)
    pivots: str | None = eqx.field(static=True, default=None)
    form: str = eqx.field(static=True, default="descriptor")
    partitions: ClassVar[bool] = True
    needs_mass_inverse: ClassVar[bool] = True

    def __check_init__(self):
        if self.form not in FORMS:
            raise ValueError(
                f"BlockSparse field 'form': expected 'descriptor' (default) or "
                f"'null-space', got {self.form!r}"
            )
        if self.pivots is not None and self.pivots not in PIVOTS:
            raise ValueError(
                f"BlockSparse field 'pivots': expected None, 'mass' or 'coordinates', "
                f"got {self.pivots!r}"
            )
        # A relative pivot is the squared sine of a row's angle to the rows before
        # it, in [0, 1]: 0 would keep the round-off of dependent rows, 1 drop all.
        if isinstance(self.pivot_rtol, bool) or not (
            isinstance(self.pivot_rtol, (int, float)) and 0.0 < self.pivot_rtol < 1.0
        ):
            raise ValueError(
                f"BlockSparse field 'pivot_rtol': expected a number in (0, 1) (default "
                f"{PIVOT_RTOL:g}), got {self.pivot_rtol!r}"
            )

    def terms(self, model, q, qd, t) -> LocalTerms:
        return local_terms(model, q, qd, t)

    def solve(self, terms: Terms | LocalTerms, gamma, structure: Structure) -> BlockSolution:
        """q̈, μ and the active rows at the state of `terms`."""
        return block_solution(terms, gamma, structure, self.pivot_rtol, self.pivots, self.form)

    def acceleration(self, terms, gamma, structure):
        return self.solve(terms, gamma, structure).qdd

    def active_rows(self, terms, gamma, structure) -> Bool[Array, " nc"]:
        """The rows of C the factorisation keeps (softly or fully) at this state."""
        return self.solve(terms, gamma, structure).active

    def multipliers(self, terms, gamma, qdd, structure):
        return self.solve(terms, gamma, structure).multipliers
