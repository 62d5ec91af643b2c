# The kernel files of cuda/, shared by the CUDA build (cuda/CMakeLists.txt) and the CPU-emulator
# build of the same files (tests/CMakeLists.txt).
set(EMBED_CUDA_KERNEL_NAMES gather dequant matmul norm rope attention attention_tc elementwise pool)
