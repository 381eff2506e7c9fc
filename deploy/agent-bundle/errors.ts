/** A failure with a message meant for the person running the build (no stack trace). */
export class BundleError extends Error {
  override readonly name: string = "BundleError";
}

/**
 * A download the build needs failed (the network, a proxy, the mirror): what
 * tests/arm-bundle.test.ts skips on, where any other BundleError fails it.
 */
export class DownloadError extends BundleError {
  override readonly name: string = "DownloadError";

  /** The HTTP status, where the server answered. */
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
