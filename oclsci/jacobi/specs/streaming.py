"""``streaming``: a copy of ``coalesced`` under another name (a throwaway example)."""

from oclsci.jacobi.specs import GRID_ARGUMENTS, KernelSpec, coalesced

SPEC = KernelSpec(
    name="streaming", params=coalesced.PARAMS, arguments=GRID_ARGUMENTS,
    launch=coalesced.launch, defaults=coalesced.defaults, cost=coalesced.cost,
    candidates=coalesced.candidates, tile=coalesced.SPEC.tile,
    work_per_item=coalesced.SPEC.work_per_item,
    examples=(({"rows_per_item": 3, "vector": 2}, (8, 2)),),
    corner_cases=(({"rows_per_item": 1, "vector": 4}, None), ({"rows_per_item": 2}, (4, 4))),
)
