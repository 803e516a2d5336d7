"""cc_grpc_library: protoc + grpc_cpp_plugin (Debian's, from /usr/bin) through a genrule.

Bazel 4.2.3 offline has no rules_proto; the generated sources are ordinary genrule outputs
compiled into a cc_library that links the system gRPC/protobuf (//third_party:grpc).
Imports are resolved relative to the workspace root, so a .proto imports another one by its
workspace path.
"""

load("@rules_cc//cc:defs.bzl", "cc_library")

def cc_grpc_library(name, srcs, deps = [], grpc = True, visibility = None, testonly = False):
    """One cc_library with the messages (and services unless grpc = False) of `srcs`."""
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    pkg = native.package_name()
    grpc_flags = "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " if grpc else ""
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_protos" for d in deps],
        outs = outs,
        cmd = "/usr/bin/protoc --proto_path=. --cpp_out=$(GENDIR) " + grpc_flags +
              " ".join([(pkg + "/" + s) if pkg else s for s in srcs]),
        testonly = testonly,
    )
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + [d + "_protos" for d in deps],
        testonly = testonly,
        visibility = visibility,
    )
    cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        # Generated code: not ours to hold to -Werror.
        copts = ["-Wno-error", "-w"],
        deps = deps + ["//third_party:grpc"],
        testonly = testonly,
        visibility = visibility,
    )
