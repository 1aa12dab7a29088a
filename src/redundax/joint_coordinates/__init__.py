"""Joint coordinates (seed 002): a spanning tree of joints with joint coordinates,
the remaining pairs as constraints, forward dynamics by Featherstone's
divide-and-conquer algorithm and the reaction-uniqueness analysis inside it.

- `_kinematics.py`: relative motions of the tree joints, forward kinematics.
- `_model.py`: [`JointModel`][] and the conversions of states.
- `_terms.py`: the equations of motion per body in twists, and dense in joint
  coordinates (the reference solve).
- `_dca.py`: the divide-and-conquer algorithm over constraint rows.
- `_dynamics.py`: the decisions taken once and the forward dynamics.
"""
