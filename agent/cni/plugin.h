#pragma once
// The `spiderpool` IPAM plugin's whole flow, independent of the process (main.cc reads the
// environment and stdin, writes stdout, exits). See README.md for the behaviour per command.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "agent/cni/netprobe.h"

namespace spiderpool::agent::cni {

// The CNI_* environment (an unset variable and an empty one are the same, as in libcni).
struct Env {
  std::string command;       // CNI_COMMAND
  std::string container_id;  // CNI_CONTAINERID
  std::string netns;         // CNI_NETNS
  std::string ifname;        // CNI_IFNAME
  std::string args;          // CNI_ARGS
  std::string path;          // CNI_PATH
  static Env FromProcess();
};

struct Outcome {
  int exit_code = 0;
  std::string stdout_text;  // the result / error JSON (empty for DEL, CHECK, GC, STATUS success)
  std::string stderr_text;  // only the "about" text when CNI_COMMAND is unset
};

struct RunHooks {
  // Called once the invocation's deadline is known (before talking to the agent), with what to
  // print if the process has to give up at the deadline (main.cc arms a watchdog with it).
  std::function<void(std::chrono::steady_clock::time_point deadline, const Outcome& on_timeout)>
      deadline_known;
  // Reads stdin; not called for VERSION (libcni does not send a config there).
  std::function<bool(std::string* out, std::string* error)> read_stdin;
  // IP conflict / gateway detection and announcements on ADD (only used when the agent's answer
  // sets enableIPConflictDetection / enableGatewayDetection for an IP of CNI_IFNAME).
  // nullptr = netprobe::SystemProber().
  netprobe::Prober* prober = nullptr;
};

Outcome Run(const Env& env, const RunHooks& hooks);

}  // namespace spiderpool::agent::cni
