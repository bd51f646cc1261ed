// The SDK's own version; a unit test keeps it equal to package.json's.
export const SDK_VERSION = "0.1.0";
/** User agent sent with every request (P-SDK-1). */
export const USER_AGENT = `orch8-typescript/${SDK_VERSION}`;
