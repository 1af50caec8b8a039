#pragma once
// RECBOLE_MULTIVERSION: compiles a hot loop for AVX-512, AVX2 and baseline x86-64 and picks the
// best at load time (GCC target_clones), so the build stays portable (no -march=native) while a
// 64-float embedding row is 4 AVX-512 vectors. Helpers called from such a function should be
// RECBOLE_INLINE so that they are compiled into each clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RECBOLE_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RECBOLE_MULTIVERSION
#endif
#define RECBOLE_INLINE inline __attribute__((always_inline))
