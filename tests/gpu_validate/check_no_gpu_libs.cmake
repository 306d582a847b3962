# cmake -DBINARY=path -P check_no_gpu_libs.cmake: fails when BINARY needs a GPU library
# (a NEEDED entry for libcuda/libcudart/libcublas/libcublasLt/libnvrtc) or has the CUDA
# runtime or cuBLAS linked in statically (their entry points among its symbols).
execute_process(COMMAND readelf -d --wide ${BINARY} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BINARY} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[lib(cuda|cudart|cublas|cublasLt|nvrtc)[^]]*\\]" needed "${dyn}")
execute_process(COMMAND nm ${BINARY} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm ${BINARY} failed (${rc})")
endif()
string(REGEX MATCHALL " [TtWw] (cudaGetDeviceCount|cudaMalloc|cublasCreate_v2|cublasLtCreate)\n" linked "${syms}")
if(needed OR linked)
  message(FATAL_ERROR "${BINARY} links a GPU library: ${needed} ${linked}")
endif()
message(STATUS "${BINARY}: no GPU library needed or linked in")
