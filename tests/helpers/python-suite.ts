/** The Python modules the SDK's pytest suite needs, and the Debian package of each (tests/python.test.ts skips without them; the READMEs' apt lines name them). */
export const PYTHON_SUITE_PACKAGES = {
  grpc: "python3-grpcio",
  "google.protobuf": "python3-protobuf",
  numpy: "python3-numpy",
  pytest: "python3-pytest",
} as const;
