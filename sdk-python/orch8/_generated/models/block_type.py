from typing import Literal

BlockType = Literal[
    "for_each",
    "loop",
    "parallel",
    "race",
    "router",
    "step",
    "sub_sequence",
    "try_catch",
]

BLOCK_TYPE_VALUES: set[BlockType] = {
    "for_each",
    "loop",
    "parallel",
    "race",
    "router",
    "step",
    "sub_sequence",
    "try_catch",
}


def check_block_type(value: str) -> BlockType:
    if value in BLOCK_TYPE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {BLOCK_TYPE_VALUES!r}"
    )
