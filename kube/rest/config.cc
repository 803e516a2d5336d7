#include "kube/rest/config.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/json.h"
#include "base/status.h"
#include "base/strings.h"
#include "base/yaml.h"

namespace spiderpool::kube {
namespace {

using base::Json;

constexpr std::string_view kServiceAccountDir = "var/run/secrets/kubernetes.io/serviceaccount";

bool IsAbsolute(std::string_view p) { return !p.empty() && p.front() == '/'; }

std::string JoinPath(std::string_view dir, std::string_view file) {
  if (IsAbsolute(file) || dir.empty()) return std::string(file);
  std::string out(dir);
  if (out.back() != '/') out.push_back('/');
  out.append(file);
  return out;
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// A scalar field as text: strings as-is, numbers and booleans in their JSON spelling (YAML
// resolves an unquoted `token: 12345` to a number).
std::optional<std::string> ScalarText(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return base::DumpJson(*it);
  return std::nullopt;
}

absl::StatusOr<bool> BoolField(const Json& obj, std::string_view key, std::string_view where) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    std::string v = it->get<std::string>();
    if (v == "true") return true;
    if (v == "false") return false;
  }
  return absl::InvalidArgumentError(
      base::StrCat("kubeconfig: ", where, ".", key, " must be a boolean"));
}

// Finds the entry `name` in a named list (clusters/users/contexts) and returns its `field`
// object ("cluster", "user", "context").
absl::StatusOr<Json> FindNamed(const Json& root, std::string_view list, std::string_view field,
                               std::string_view name) {
  auto it = root.find(list);
  if (it == root.end() || it->is_null()) {
    return absl::NotFoundError(
        base::StrCat("kubeconfig: ", field, " \"", name, "\" not found (no ", list, ")"));
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(base::StrCat("kubeconfig: ", list, " must be a list"));
  }
  for (const Json& entry : *it) {
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(
          base::StrCat("kubeconfig: every entry of ", list, " must be a mapping"));
    }
    std::optional<std::string> n = ScalarText(entry, "name");
    if (!n.has_value() || *n != name) continue;
    auto f = entry.find(field);
    if (f == entry.end() || f->is_null()) return Json::object();
    if (!f->is_object()) {
      return absl::InvalidArgumentError(
          base::StrCat("kubeconfig: ", list, "[name=", name, "].", field, " must be a mapping"));
    }
    return *f;
  }
  return absl::NotFoundError(
      base::StrCat("kubeconfig: ", field, " \"", name, "\" not found in ", list));
}

// `<key>-data` (base64) wins over `<key>` (a file path).
absl::StatusOr<std::string> DataOrFile(const Json& obj, std::string_view key,
                                       std::string_view where, const KubeconfigOptions& opts,
                                       const FileReader& read) {
  std::string data_key = base::StrCat(key, "-data");
  if (std::optional<std::string> data = ScalarText(obj, data_key);
      data.has_value() && !data->empty()) {
    absl::StatusOr<std::string> decoded = Base64Decode(*data);
    if (!decoded.ok()) {
      return absl::InvalidArgumentError(base::StrCat("kubeconfig: ", where, ".", data_key, ": ",
                                                     base::FromAbsl(decoded.status().message())));
    }
    return decoded;
  }
  if (std::optional<std::string> file = ScalarText(obj, key); file.has_value() && !file->empty()) {
    std::string path = JoinPath(opts.base_dir, *file);
    absl::StatusOr<std::string> content = read(path);
    if (!content.ok()) {
      return absl::Status(content.status().code(),
                          base::ToAbsl(base::StrCat("kubeconfig: ", where, ".", key, ": ",
                                                    base::FromAbsl(content.status().message()))));
    }
    return content;
  }
  return std::string();
}

bool IsNodeStart(char prev) {
  return prev == '\0' || prev == ':' || prev == '-' || prev == '[' || prev == '{' || prev == ',' ||
         prev == '?';
}

// Rejects YAML shapes that a kubeconfig never has and that trip known problems of the YAML
// stack, before base::ParseYaml sees the text:
//  - yaml-cpp 0.7's LoadAll loops forever, allocating, when a ',' follows a finished top-level
//    node (`"",`, `- a\n,`, `  a: 1\n,`, `a: 1\n---\n,`; jbeder/yaml-cpp#1040, fixed upstream by
//    #1319). It cannot happen when the document is one block mapping starting at column 0 with
//    no document markers after it, so that is what we require;
//  - aliases (`*name`): base::ParseYaml expands them, and nested aliases grow exponentially
//    ("billion laughs").
// Block scalars (| and >) are skipped; quoted scalars may span lines.
absl::Status CheckKubeconfigYamlShape(std::string_view text) {
  bool content_started = false;
  char quote = '\0';               // inside a quoted scalar spanning lines
  int block_parent_indent = -1;    // inside a block scalar whose parent line had this indent
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t indent = line.find_first_not_of(' ');
    bool blank = indent == std::string_view::npos;
    if (block_parent_indent >= 0) {
      if (blank || static_cast<int>(indent) > block_parent_indent) continue;
      block_parent_indent = -1;
    }
    if (quote == '\0') {
      if (blank) continue;
      std::string_view rest = line.substr(indent);
      if (rest.front() == '#' || rest.front() == '\t') continue;
      bool marker = indent == 0 && (rest.substr(0, 3) == "---" || rest.substr(0, 3) == "...") &&
                    (rest.size() == 3 || rest[3] == ' ' || rest[3] == '\t');
      if (!content_started) {
        if (rest.front() == '%' || (marker && rest.substr(0, 3) == "---" &&
                                    rest.find_first_not_of(" \t", 3) == std::string_view::npos)) {
          continue;  // a directive or the leading document marker
        }
        if (indent != 0) {
          return absl::InvalidArgumentError(
              "kubeconfig: the top level must be a mapping starting at column 0");
        }
        // The first key: quoted or plain, then ':' followed by a space or the end of line.
        size_t colon = std::string_view::npos;
        if (rest.front() == '"' || rest.front() == '\'') {
          char q = rest.front();
          size_t i = 1;
          while (i < rest.size()) {
            if (q == '"' && rest[i] == '\\') {
              i += 2;
              continue;
            }
            if (rest[i] == q) {
              if (q == '\'' && i + 1 < rest.size() && rest[i + 1] == '\'') {
                i += 2;
                continue;
              }
              break;
            }
            ++i;
          }
          size_t after = rest.find_first_not_of(' ', i + 1);
          if (i < rest.size() && after != std::string_view::npos && rest[after] == ':') {
            colon = after;
          }
        } else if (std::string_view("[]{}-?,&*!|>%@`#").find(rest.front()) ==
                   std::string_view::npos) {
          size_t c = rest.find(':');
          while (c != std::string_view::npos && c + 1 < rest.size() && rest[c + 1] != ' ') {
            c = rest.find(':', c + 1);
          }
          colon = c;
        }
        if (colon == std::string_view::npos ||
            (colon + 1 < rest.size() && rest[colon + 1] != ' ')) {
          return absl::InvalidArgumentError("kubeconfig: the top level must be a YAML mapping");
        }
        content_started = true;
      } else if (marker) {
        return absl::InvalidArgumentError("kubeconfig: expected a single YAML document");
      }
    }
    // Scan the line for quotes, comments, aliases and block scalar headers.
    char prev = '\0';  // previous significant character on the line ('\0' = line start)
    size_t last_sig = std::string_view::npos;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quote != '\0') {
        if (quote == '"' && c == '\\') {
          ++i;
        } else if (c == quote) {
          if (quote == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
            ++i;
          } else {
            quote = '\0';
            prev = c;
            last_sig = i;
          }
        }
        continue;
      }
      if (c == ' ' || c == '\t') continue;
      if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) break;
      bool at_node_start = IsNodeStart(prev) &&
                           (prev == '\0' || prev == '[' || prev == '{' || prev == ',' ||
                            i == 0 || line[i - 1] == ' ');
      if (at_node_start && (c == '"' || c == '\'')) {
        quote = c;
        continue;
      }
      if (at_node_start && c == '*') {
        return absl::InvalidArgumentError("kubeconfig: YAML aliases are not supported");
      }
      prev = c;
      last_sig = i;
    }
    if (quote == '\0' && last_sig != std::string_view::npos) {
      // A block scalar header ends the line: "key: |", "- >-", "key: |2+".
      size_t h = last_sig;
      while (h > 0 && (line[h] == '-' || line[h] == '+' || (line[h] >= '0' && line[h] <= '9'))) --h;
      if ((line[h] == '|' || line[h] == '>') && (h == 0 || line[h - 1] == ' ')) {
        block_parent_indent = blank ? 0 : static_cast<int>(indent);
      }
    }
  }
  if (!content_started) return absl::InvalidArgumentError("kubeconfig: empty document");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(base::StrCat("cannot read ", path, ": no such file"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(base::StrCat("cannot read ", path, ": not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::PermissionDeniedError(base::StrCat("cannot open ", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::string> Base64Decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  int padding = 0;
  size_t symbols = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return absl::InvalidArgumentError("invalid base64: data after padding");
    int v = value(c);
    if (v < 0) return absl::InvalidArgumentError("invalid base64: unexpected character");
    ++symbols;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if (padding > 2 || symbols % 4 == 1) return absl::InvalidArgumentError("invalid base64: length");
  if (padding > 0 && (symbols + padding) % 4 != 0) {
    return absl::InvalidArgumentError("invalid base64: padding");
  }
  return out;
}

std::string Base64Encode(std::string_view data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8) |
                 static_cast<uint8_t>(data[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i + 1 == data.size()) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.append("==");
  } else if (i + 2 == data.size()) {
    uint32_t v = (static_cast<uint8_t>(data[i]) << 16) | (static_cast<uint8_t>(data[i + 1]) << 8);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

absl::StatusOr<ServerAddress> ParseServerUrl(std::string_view url) {
  ServerAddress out;
  std::string_view rest = url;
  if (rest.substr(0, 8) == "https://") {
    out.tls = true;
    out.port = 443;
    rest.remove_prefix(8);
  } else if (rest.substr(0, 7) == "http://") {
    out.tls = false;
    out.port = 80;
    rest.remove_prefix(7);
  } else {
    return absl::InvalidArgumentError(
        base::StrCat("server URL \"", url, "\" must start with https:// or http://"));
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return absl::InvalidArgumentError("server URL must not contain user info");
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(base::StrCat("server URL \"", url, "\": unclosed '['"));
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return absl::InvalidArgumentError(base::StrCat("server URL \"", url, "\": bad port"));
      }
      port_text = after.substr(1);
    }
  } else {
    size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      out.host = std::string(authority.substr(0, colon));
      port_text = authority.substr(colon + 1);
    } else {
      out.host = std::string(authority);
    }
  }
  if (out.host.empty()) {
    return absl::InvalidArgumentError(base::StrCat("server URL \"", url, "\" has no host"));
  }
  if (!port_text.empty()) {
    int port = 0;
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port <= 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(base::StrCat("server URL \"", url, "\": bad port"));
    }
    out.port = port;
  }
  size_t q = path.find_first_of("?#");
  if (q != std::string_view::npos) path = path.substr(0, q);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.base_path = std::string(path);
  return out;
}

absl::StatusOr<Config> ParseKubeconfig(std::string_view yaml, const KubeconfigOptions& options) {
  FileReader read = options.read_file ? options.read_file : FileReader(ReadFileToString);
  // JSON kubeconfigs (kubectl accepts them) go to the JSON parser; YAML ones are screened first.
  size_t first = yaml.find_first_not_of(" \t\r\n");
  absl::StatusOr<Json> parsed;
  if (first != std::string_view::npos && yaml[first] == '{') {
    parsed = base::ParseJson(yaml);
  } else {
    SP_RETURN_IF_ERROR(CheckKubeconfigYamlShape(yaml));
    parsed = base::ParseYaml(yaml);
  }
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        base::StrCat("kubeconfig: ", base::FromAbsl(parsed.status().message())));
  }
  const Json& root = *parsed;
  if (!root.is_object()) return absl::InvalidArgumentError("kubeconfig: not a mapping");

  std::string context_name = options.context;
  if (context_name.empty()) context_name = ScalarText(root, "current-context").value_or("");
  if (context_name.empty()) {
    return absl::InvalidArgumentError(
        "kubeconfig: no current-context set and no context given");
  }
  SP_ASSIGN_OR_RETURN(Json context, FindNamed(root, "contexts", "context", context_name));
  std::string cluster_name = ScalarText(context, "cluster").value_or("");
  std::string user_name = ScalarText(context, "user").value_or("");
  if (cluster_name.empty()) {
    return absl::InvalidArgumentError(
        base::StrCat("kubeconfig: context \"", context_name, "\" names no cluster"));
  }

  Config config;
  config.namespace_ = ScalarText(context, "namespace").value_or("");

  SP_ASSIGN_OR_RETURN(Json cluster, FindNamed(root, "clusters", "cluster", cluster_name));
  std::string cluster_where = base::StrCat("cluster \"", cluster_name, "\"");
  config.server = ScalarText(cluster, "server").value_or("");
  if (config.server.empty()) {
    return absl::InvalidArgumentError(base::StrCat("kubeconfig: ", cluster_where, " has no server"));
  }
  {
    absl::StatusOr<ServerAddress> addr = ParseServerUrl(config.server);
    if (!addr.ok()) {
      return absl::InvalidArgumentError(base::StrCat("kubeconfig: ", cluster_where, ": ",
                                                     base::FromAbsl(addr.status().message())));
    }
  }
  SP_ASSIGN_OR_RETURN(config.insecure_skip_tls_verify,
                      BoolField(cluster, "insecure-skip-tls-verify", cluster_where));
  SP_ASSIGN_OR_RETURN(config.ca_pem,
                      DataOrFile(cluster, "certificate-authority", cluster_where, options, read));

  if (!user_name.empty()) {
    SP_ASSIGN_OR_RETURN(Json user, FindNamed(root, "users", "user", user_name));
    std::string user_where = base::StrCat("user \"", user_name, "\"");
    config.bearer_token = ScalarText(user, "token").value_or("");
    if (std::optional<std::string> tf = ScalarText(user, "tokenFile"); tf && !tf->empty()) {
      config.bearer_token_file = JoinPath(options.base_dir, *tf);
    }
    SP_ASSIGN_OR_RETURN(config.client_cert_pem,
                        DataOrFile(user, "client-certificate", user_where, options, read));
    SP_ASSIGN_OR_RETURN(config.client_key_pem,
                        DataOrFile(user, "client-key", user_where, options, read));
    if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
      return absl::InvalidArgumentError(base::StrCat(
          "kubeconfig: ", user_where, " needs both client-certificate and client-key"));
    }
    bool has_credentials = !config.bearer_token.empty() || !config.bearer_token_file.empty() ||
                           !config.client_cert_pem.empty();
    if (!has_credentials) {
      for (std::string_view unsupported : {"exec", "auth-provider", "username"}) {
        if (user.contains(unsupported)) {
          return absl::UnimplementedError(base::StrCat("kubeconfig: ", user_where, " uses ",
                                                       unsupported, ", which is not supported"));
        }
      }
    }
  }
  return config;
}

absl::StatusOr<Config> LoadKubeconfig(const std::string& path, std::string_view context) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        base::ToAbsl(base::StrCat("kubeconfig: ",
                                                  base::FromAbsl(text.status().message()))));
  }
  KubeconfigOptions options;
  options.context = std::string(context);
  options.base_dir = DirName(path);
  return ParseKubeconfig(*text, options);
}

absl::StatusOr<Config> InClusterConfig(const InClusterOptions& options) {
  auto getenv = options.getenv ? options.getenv
                               : [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  std::string host = getenv("KUBERNETES_SERVICE_HOST").value_or("");
  std::string port = getenv("KUBERNETES_SERVICE_PORT").value_or("");
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  std::string dir = JoinPath(options.root, kServiceAccountDir);
  Config config;
  bool v6 = host.find(':') != std::string::npos;
  config.server = base::StrCat("https://", v6 ? "[" : "", host, v6 ? "]" : "", ":", port);
  SP_RETURN_IF_ERROR(ParseServerUrl(config.server).status());
  config.bearer_token_file = dir + "/token";
  absl::StatusOr<std::string> token = ReadFileToString(config.bearer_token_file);
  if (!token.ok()) {
    return absl::Status(token.status().code(),
                        base::ToAbsl(base::StrCat("in-cluster config: ",
                                                  base::FromAbsl(token.status().message()))));
  }
  config.bearer_token = *token;
  absl::StatusOr<std::string> ca = ReadFileToString(dir + "/ca.crt");
  if (!ca.ok()) {
    return absl::Status(ca.status().code(),
                        base::ToAbsl(base::StrCat("in-cluster config: ",
                                                  base::FromAbsl(ca.status().message()))));
  }
  config.ca_pem = *ca;
  if (absl::StatusOr<std::string> ns = ReadFileToString(dir + "/namespace"); ns.ok()) {
    std::string n = *ns;
    while (!n.empty() && (n.back() == '\n' || n.back() == ' ')) n.pop_back();
    config.namespace_ = n;
  }
  return config;
}

absl::StatusOr<Config> ConfigFromEnvOrDefault() {
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string_view list = env;
    while (!list.empty()) {
      size_t colon = list.find(':');
      std::string path(list.substr(0, colon));
      list = colon == std::string_view::npos ? "" : list.substr(colon + 1);
      struct stat st;
      if (!path.empty() && ::stat(path.c_str(), &st) == 0) return LoadKubeconfig(path);
    }
    return absl::NotFoundError(base::StrCat("KUBECONFIG=", env, ": no such file"));
  }
  absl::StatusOr<Config> in_cluster = InClusterConfig();
  if (in_cluster.ok() || in_cluster.status().code() != absl::StatusCode::kFailedPrecondition) {
    return in_cluster;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    std::string path = base::StrCat(home, "/.kube/config");
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return LoadKubeconfig(path);
  }
  return absl::FailedPreconditionError(
      "no Kubernetes configuration: KUBECONFIG is unset, not running in a cluster, and "
      "~/.kube/config does not exist");
}

}  // namespace spiderpool::kube
