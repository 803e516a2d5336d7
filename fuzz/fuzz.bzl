"""fuzz_target: one libFuzzer target (see README.md)."""

def fuzz_target(name, srcs, deps = [], local_defines = []):
    """A libFuzzer binary under --config=fuzz; elsewhere a replayer of the same entry point.

    Under --config=fuzz or fuzz_smoke (//fuzz:fuzzing) it links with -fsanitize=fuzzer (libFuzzer's main);
    in every other config it links replay_main.cc, which runs LLVMFuzzerTestOneInput once per
    file given, so the product build (g++) compiles every target and a crash input can be
    replayed under gdb without clang. Its seeds are corpus/<name>/ in its package
    (read by tools/fuzz.sh from the source tree, not a Bazel input).
    """
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        local_defines = local_defines,
        deps = deps + select({
            "//fuzz:fuzzing": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        tags = ["fuzz_target"],
    )
