/**
 * The CUDA host compiler: CUDA C++ source → nvcc → a module bundle (target
 * "cuda"), with per-kernel resources from ptxas and an on-disk compile cache.
 */
export {
  compileCuda,
  compileCudaMany,
  cudaFunctionTable,
  DEFAULT_CUDA_ARCH,
  DEFAULT_CUDA_FILE_NAME,
  type CompileCudaOptions,
  type CudaCompiledModule,
  type CudaFunctionDecl,
  type Dim3,
  type LaunchDecl,
} from "./compile-cuda.ts";
export { parsePtxasInfo, type KernelResources, type PtxasReport } from "./ptxas-info.ts";
export { defaultCacheDir, CACHE_FORMAT } from "./cache.ts";
export { locateNvcc, nvccVersion, NVCC_INSTALL_HINT, type NvccLocation, type NvccVersion } from "./nvcc.ts";
