#pragma once
// The process plumbing of our CNI plugin binaries (spiderpool, ifacer, coordinator): a plugin's
// main() is `return PluginMain(&RunFromProcess);`. Ignores SIGPIPE, reads the CNI_* environment,
// gives `run` the stdin reader (16 MiB at most) and a watchdog (armed through
// ProcessHooks::deadline_known: at deadline + 0.5 s it prints the outcome it was armed with and
// exits; a SIGALRM timer, so a plugin uses neither SIGALRM nor ITIMER_REAL), then prints the outcome (stderr, then stdout) and exits with its code without running
// static destructors. Never returns.

#include "agent/cni/skel.h"

namespace spiderpool::agent::cni {

[[noreturn]] void PluginMain(Outcome (*run)(const Env& env, const ProcessHooks& hooks));

}  // namespace spiderpool::agent::cni
