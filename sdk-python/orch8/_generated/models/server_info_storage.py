from typing import Literal

ServerInfoStorage = Literal["postgresql", "sqlite"]

SERVER_INFO_STORAGE_VALUES: set[ServerInfoStorage] = {
    "postgresql",
    "sqlite",
}


def check_server_info_storage(value: str) -> ServerInfoStorage:
    if value in SERVER_INFO_STORAGE_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {SERVER_INFO_STORAGE_VALUES!r}"
    )
