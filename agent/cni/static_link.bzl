"""Static linking of the CNI plugin binaries (spiderpool, ifacer, coordinator).

Loaded by agent/cni, agent/ifacer and agent/coordinator: one list for the three binaries.
"""

# Start-up cost is almost all shared-library loading (bench/README.md "cni_exec_bench"): the
# plugin links abseil's static archives (resolved before //third_party:absl's -labsl_* flags,
# which --as-needed then drops), and libstdc++'s: with no cpp-httplib the binary maps 4 shared
# objects (libc, libm, libgcc_s, ld.so; it was 38, then 13). The list mirrors
# //third_party:absl; a missing entry just falls back to the shared library.
ABSL_STATIC = [
    "absl_statusor",
    "absl_status",
    "absl_strerror",
    "absl_str_format_internal",
    "absl_cord",
    "absl_cordz_info",
    "absl_cord_internal",
    "absl_cordz_functions",
    "absl_cordz_handle",
    "absl_hash",
    "absl_city",
    "absl_bad_variant_access",
    "absl_low_level_hash",
    "absl_raw_hash_set",
    "absl_hashtablez_sampler",
    "absl_exponential_biased",
    "absl_synchronization",
    "absl_graphcycles_internal",
    "absl_stacktrace",
    "absl_symbolize",
    "absl_debugging_internal",
    "absl_demangle_internal",
    "absl_malloc_internal",
    "absl_time",
    "absl_civil_time",
    "absl_time_zone",
    "absl_random_distributions",
    "absl_throw_delegate",
    "absl_raw_logging_internal",
    "absl_random_seed_sequences",
    "absl_random_internal_pool_urbg",
    "absl_random_internal_randen",
    "absl_random_internal_randen_hwaes",
    "absl_random_internal_randen_hwaes_impl",
    "absl_random_internal_randen_slow",
    "absl_random_internal_platform",
    "absl_random_internal_seed_material",
    "absl_bad_optional_access",
    "absl_strings",
    "absl_strings_internal",
    "absl_base",
    "absl_spinlock_wait",
    "absl_int128",
    "absl_random_seed_gen_exception",
    "absl_log_severity",
]

# The linkopts of every CNI plugin binary: abseil's and libstdc++'s static archives in one
# group (they reference each other), --as-needed so the shared -labsl_* flags that
# //third_party:absl adds afterwards are dropped.
#
# In the product build (g++) the binaries are linked fully static (`-static`: libnl, libc,
# libm, libgcc too): the dynamic loader resolving libnl-route-3/libnl-3/libc was about a third of
# the coordinator's exec (bench/README.md "coordinator_add": p99 32-53 ms shared, 8-13 ms
# static). The sanitizer build (clang) cannot link ASan statically, so it keeps the shared
# system libraries; images/bundle-cni.sh handles both.
PLUGIN_LINKOPTS = (
    ["-Wl,--as-needed", "-Wl,--start-group"] +
    ["-l:lib%s.a" % lib for lib in ABSL_STATIC] +
    ["-l:libstdc++.a", "-Wl,--end-group"]
) + select({
    "//bazel:sanitizers": [],
    "//conditions:default": ["-static"],
})
