/**
 * Whether this machine can run the CUDA suites: a loadable NVIDIA driver with
 * at least one device, and nvcc to build the kernels. Without them the suites
 * skip with the reason printed.
 */
import { locateNvcc } from "../../host-sdk/cuda/index.ts";

export async function cudaSkipReason(): Promise<string | false> {
  try {
    const { cudaDeviceCount } = await import("../../device-agent/backends/cuda/device-info.ts");
    if (cudaDeviceCount() === 0) return "no CUDA device on this machine (the NVIDIA driver reports 0 devices)";
  } catch (err) {
    return (err as Error).message;
  }
  try {
    await locateNvcc();
  } catch (err) {
    return `nvcc is needed to build the test kernels: ${(err as Error).message}`;
  }
  return false;
}
