/* Stand-in for libagileos_cudart.so in the sandbox test: a library with the
 * soname libcudart.so.13, so that the test sees what the probe reports when the
 * CUDA runtime's soname resolves to the preloaded shim. It has no CUDA code. */
int agileos_sandbox_test_fake_shim = 1;
