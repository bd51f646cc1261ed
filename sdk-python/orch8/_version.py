"""The SDK's own version and user agent (P-SDK-1)."""

__version__ = "0.1.0"
SDK_NAME = "orch8-python"
USER_AGENT = f"{SDK_NAME}/{__version__}"
