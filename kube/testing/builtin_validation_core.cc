// Built-in validation, core/v1 kinds (see builtin_validation_internal.h and the rules' sources in
// builtin_validation.cc). Moved unchanged from builtin_validation.cc.
#include "kube/testing/builtin_validation_internal.h"

namespace spiderpool::kube::testing::internal::builtin {

// ---- core: pods and templates ----

const std::vector<std::string> kTaintEffects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

void ValidateTolerations(const Json& spec, const std::string& path, Errs& errs) {
  const Json* tols = ArrAt(spec, "tolerations");
  if (tols == nullptr) return;
  for (size_t i = 0; i < tols->size(); ++i) {
    const Json& t = (*tols)[i];
    std::string p = Index(path, i);
    std::string key = StrAt(t, "key"), op = StrAt(t, "operator"), value = StrAt(t, "value");
    std::string effect = StrAt(t, "effect");
    if (!key.empty()) CheckQualifiedName(Child(p, "key"), key, errs);
    if (key.empty() && op != "Exists") {
      errs.push_back(FieldInvalid(
          Child(p, "operator"), Quote(op),
          "operator must be Exists when `key` is empty, which means \"match all values and all "
          "keys\""));
    }
    if (Has(t, "tolerationSeconds") && effect != "NoExecute") {
      errs.push_back(FieldInvalid(Child(p, "effect"), Quote(effect),
                                  "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    if (op.empty() || op == "Equal") {
      CheckLabelValue(Child(p, "operator"), value, errs);
    } else if (op == "Exists") {
      if (!value.empty()) {
        errs.push_back(FieldInvalid(Child(p, "operator"),
                                    GoStruct(t,
                                             {{"key", "Key"},
                                              {"operator", "Operator"},
                                              {"value", "Value"},
                                              {"effect", "Effect"},
                                              {"tolerationSeconds", "TolerationSeconds"}},
                                             {"key", "operator", "value", "effect"}),
                                    "value must be empty when `operator` is 'Exists'"));
      }
    } else {
      errs.push_back(FieldNotSupported(Child(p, "operator"), Quote(op), {"Equal", "Exists"}));
    }
    if (!effect.empty() &&
        std::find(kTaintEffects.begin(), kTaintEffects.end(), effect) == kTaintEffects.end()) {
      errs.push_back(FieldNotSupported(Child(p, "effect"), Quote(effect), kTaintEffects));
    }
  }
}

// validateContainerCommon: what regular and init containers share.
void ValidateContainerCommon(const Json& c, const std::string& p, Errs& errs) {
  std::string name = StrAt(c, "name");
  if (name.empty()) {
    errs.push_back(FieldRequired(Child(p, "name"), ""));
  } else {
    CheckDnsLabel(Child(p, "name"), name, errs);
  }
  if (StrAt(c, "image").empty()) errs.push_back(FieldRequired(Child(p, "image"), ""));
  NotSupportedIfSet(c, "terminationMessagePolicy", Child(p, "terminationMessagePolicy"),
                    {"File", "FallbackToLogsOnError"}, errs);
  if (const Json* ports = ArrAt(c, "ports")) {
    std::set<std::string> names;
    for (size_t i = 0; i < ports->size(); ++i) {
      const Json& port = (*ports)[i];
      std::string pp = Index(Child(p, "ports"), i);
      std::string pname = StrAt(port, "name");
      if (!pname.empty()) {
        std::vector<std::string> msgs = PortNameErrors(pname);
        for (std::string& m : msgs)
          errs.push_back(FieldInvalid(Child(pp, "name"), Quote(pname), m));
        if (msgs.empty() && !names.insert(pname).second) {
          errs.push_back(FieldDuplicate(Child(pp, "name"), Quote(pname)));
        }
      }
      std::optional<int64_t> cp = IntAt(port, "containerPort");
      if (!cp || *cp == 0) {
        errs.push_back(FieldRequired(Child(pp, "containerPort"), ""));
      } else if (std::string e = PortNumError(*cp); !e.empty()) {
        errs.push_back(FieldInvalid(Child(pp, "containerPort"), RenderInt(*cp), e));
      }
      std::optional<int64_t> hp = IntAt(port, "hostPort");
      if (hp && *hp != 0) {
        if (std::string e = PortNumError(*hp); !e.empty()) {
          errs.push_back(FieldInvalid(Child(pp, "hostPort"), RenderInt(*hp), e));
        }
      }
      NotSupportedIfSet(port, "protocol", Child(pp, "protocol"), {"SCTP", "TCP", "UDP"}, errs);
    }
  }
  if (const Json* env = ArrAt(c, "env")) {
    for (size_t i = 0; i < env->size(); ++i) {
      if (StrAt((*env)[i], "name").empty()) {
        errs.push_back(FieldRequired(Child(Index(Child(p, "env"), i), "name"), ""));
      }
    }
  }
  NotSupportedIfSet(c, "imagePullPolicy", Child(p, "imagePullPolicy"),
                    {"Always", "IfNotPresent", "Never"}, errs);
}

void ValidatePodSpec(const Json& spec, const std::string& path, Errs& errs) {
  // volumes
  if (const Json* vols = ArrAt(spec, "volumes")) {
    std::set<std::string> names;
    for (size_t i = 0; i < vols->size(); ++i) {
      const Json& v = (*vols)[i];
      std::string p = Index(Child(path, "volumes"), i);
      Errs el;
      size_t sources = 0;
      if (v.is_object()) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (it.key() != "name" && !it.value().is_null()) ++sources;
        }
      }
      if (sources == 0) el.push_back(FieldRequired(p, "must specify a volume type"));
      std::string name = StrAt(v, "name");
      if (name.empty()) {
        el.push_back(FieldRequired(Child(p, "name"), ""));
      } else {
        CheckDnsLabel(Child(p, "name"), name, el);
      }
      if (names.count(name)) el.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
      if (el.empty()) names.insert(name);
      for (FieldError& e : el) errs.push_back(std::move(e));
    }
  }
  // containers
  std::set<std::string> names;
  const Json* containers = ArrAt(spec, "containers");
  std::string cpath = Child(path, "containers");
  if (containers == nullptr || containers->empty()) {
    errs.push_back(FieldRequired(cpath, ""));
  } else {
    for (size_t i = 0; i < containers->size(); ++i) {
      const Json& c = (*containers)[i];
      std::string p = Index(cpath, i);
      ValidateContainerCommon(c, p, errs);
      std::string name = StrAt(c, "name");
      if (!names.insert(name).second) errs.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
    }
  }
  if (const Json* inits = ArrAt(spec, "initContainers")) {
    for (size_t i = 0; i < inits->size(); ++i) {
      const Json& c = (*inits)[i];
      std::string p = Index(Child(path, "initContainers"), i);
      ValidateContainerCommon(c, p, errs);
      std::string name = StrAt(c, "name");
      if (names.count(name)) {
        errs.push_back(FieldDuplicate(Child(p, "name"), Quote(name)));
      } else if (!name.empty()) {
        names.insert(name);
      }
    }
  }
  NotSupportedIfSet(spec, "restartPolicy", Child(path, "restartPolicy"),
                    {"Always", "OnFailure", "Never"}, errs);
  NotSupportedIfSet(spec, "dnsPolicy", Child(path, "dnsPolicy"),
                    {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}, errs);
  ValidateLabelMap(At(spec, "nodeSelector"), Child(path, "nodeSelector"), errs);
  if (std::string sa = StrAt(spec, "serviceAccountName"); !sa.empty()) {
    CheckDnsSubdomain(Child(path, "serviceAccountName"), sa, errs);
  }
  if (std::string node = StrAt(spec, "nodeName"); !node.empty()) {
    CheckDnsSubdomain(Child(path, "nodeName"), node, errs);
  }
  if (std::optional<int64_t> ads = IntAt(spec, "activeDeadlineSeconds")) {
    if (*ads < 1 || *ads > std::numeric_limits<int32_t>::max()) {
      errs.push_back(FieldInvalid(Child(path, "activeDeadlineSeconds"), RenderInt(*ads),
                                  "must be between 1 and 2147483647, inclusive"));
    }
  }
  if (std::string h = StrAt(spec, "hostname"); !h.empty())
    CheckDnsLabel(Child(path, "hostname"), h, errs);
  if (std::string s = StrAt(spec, "subdomain"); !s.empty()) {
    CheckDnsLabel(Child(path, "subdomain"), s, errs);
  }
  ValidateTolerations(spec, Child(path, "tolerations"), errs);
}

// ValidatePodTemplateSpec (labels and annotations are reported at <path>.labels, as kube does).
void ValidatePodTemplateSpec(const Json& tmpl, const std::string& path, Errs& errs) {
  const Json& meta = ObjAt(tmpl, "metadata");
  ValidateLabelMap(At(meta, "labels"), Child(path, "labels"), errs);
  ValidateAnnotationMap(At(meta, "annotations"), Child(path, "annotations"), errs);
  const Json& spec = ObjAt(tmpl, "spec");
  ValidatePodSpec(spec, Child(path, "spec"), errs);
  if (ArrSize(spec, "ephemeralContainers") > 0) {
    errs.push_back(FieldForbidden(Child(path, "spec.ephemeralContainers"),
                                  "ephemeral containers not allowed in pod template"));
  }
}

void ImageWhitespace(const Json& spec, std::string_view list, const std::string& path, Errs& errs) {
  const Json* cs = ArrAt(spec, list);
  if (cs == nullptr) return;
  for (size_t i = 0; i < cs->size(); ++i) {
    std::string image = StrAt((*cs)[i], "image");
    size_t b = image.find_first_not_of(" \t\n\v\f\r");
    size_t e = image.find_last_not_of(" \t\n\v\f\r");
    bool trimmed = image.empty() || (b == 0 && e == image.size() - 1);
    if (!trimmed) {
      errs.push_back(FieldInvalid(Child(Index(Child(path, list), i), "image"), Quote(image),
                                  "must not have leading or trailing whitespace"));
    }
  }
}

constexpr std::string_view kPodUpdateForbidden =
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

void ValidatePod(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  ValidatePodSpec(spec, "spec", errs);
  ImageWhitespace(spec, "containers", "spec", errs);
  ImageWhitespace(spec, "initContainers", "spec", errs);
  if (old == nullptr) {
    if (ArrSize(spec, "ephemeralContainers") > 0) {
      errs.push_back(FieldForbidden("spec.ephemeralContainers", "cannot be set on create"));
    }
    if (!StrAt(spec, "nodeName").empty() && ArrSize(spec, "schedulingGates") > 0) {
      errs.push_back(FieldForbidden("spec.nodeName",
                                    "cannot be set until all schedulingGates have been cleared"));
    }
    return;
  }
  const Json& old_spec = ObjAt(*old, "spec");
  // ValidateContainerUpdates: the number of (init) containers is fixed.
  for (std::string_view list : {"containers", "initContainers"}) {
    if (ArrSize(spec, list) != ArrSize(old_spec, list)) {
      errs.push_back(
          FieldForbidden(Child("spec", list), "pod updates may not add or remove containers"));
      return;
    }
  }
  // activeDeadlineSeconds: set from nil, or lowered.
  std::optional<int64_t> ads = IntAt(spec, "activeDeadlineSeconds");
  std::optional<int64_t> old_ads = IntAt(old_spec, "activeDeadlineSeconds");
  if (ads) {
    if (*ads < 0 || *ads > std::numeric_limits<int32_t>::max()) {
      errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", RenderInt(*ads),
                                  "must be between 0 and 2147483647, inclusive"));
      return;
    }
    if (old_ads && *old_ads < *ads) {
      errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", RenderInt(*ads),
                                  "must be less than or equal to previous value"));
      return;
    }
  } else if (old_ads) {
    errs.push_back(FieldInvalid("spec.activeDeadlineSeconds", "null",
                                "must not update from a positive integer to nil value"));
  }
  // Tolerations: existing ones stay (tolerationSeconds may change), new ones may be added.
  if (const Json* old_tols = ArrAt(old_spec, "tolerations")) {
    const Json* tols = ArrAt(spec, "tolerations");
    for (const Json& ot : *old_tols) {
      bool found = false;
      Json want = NormalizedSpec(ot);
      if (want.is_object()) want.erase("tolerationSeconds");
      for (size_t i = 0; tols != nullptr && i < tols->size() && !found; ++i) {
        Json have = NormalizedSpec((*tols)[i]);
        if (have.is_object()) have.erase("tolerationSeconds");
        found = have == want;
      }
      if (!found) {
        errs.push_back(FieldForbidden("spec.tolerations",
                                      "existing toleration can not be modified except its "
                                      "tolerationSeconds"));
        break;
      }
    }
  }
  // Everything else in spec is immutable.
  Json munged = NormalizedSpec(spec);
  Json before = NormalizedSpec(old_spec);
  for (std::string_view list : {"containers", "initContainers"}) {
    const Json* olds = ArrAt(before, list);
    auto found = munged.find(std::string(list));
    if (olds == nullptr || found == munged.end() || !found->is_array()) continue;
    Json* news = &*found;
    for (size_t i = 0; i < news->size() && i < olds->size(); ++i) {
      if (!(*news)[i].is_object()) continue;
      if (const Json* img = At((*olds)[i], "image")) {
        (*news)[i]["image"] = *img;
      } else {
        (*news)[i].erase("image");
      }
    }
  }
  for (std::string_view k : {"activeDeadlineSeconds", "tolerations", "schedulingGates"}) {
    munged.erase(std::string(k));
    if (const Json* v = At(before, k)) munged[std::string(k)] = *v;
  }
  std::optional<int64_t> old_grace = IntAt(old_spec, "terminationGracePeriodSeconds");
  std::optional<int64_t> grace = IntAt(spec, "terminationGracePeriodSeconds");
  if (old_grace && *old_grace < 0 && grace && *grace == 1) {
    munged["terminationGracePeriodSeconds"] = *old_grace;
  }
  if (munged == before) return;
  // kube-apiserver appends a cmp.Diff of the internal PodSpec; this lists the changed fields.
  std::string diff = "  core.PodSpec{\n";
  std::set<std::string> keys;
  for (auto it = munged.begin(); it != munged.end(); ++it) keys.insert(it.key());
  for (auto it = before.begin(); it != before.end(); ++it) keys.insert(it.key());
  for (const std::string& k : keys) {
    const Json* a = At(before, k);
    const Json* b = At(munged, k);
    if (a != nullptr && b != nullptr && *a == *b) continue;
    if (a != nullptr) diff += StrCat("- \t", k, ": ", GoJson(*a), ",\n");
    if (b != nullptr) diff += StrCat("+ \t", k, ": ", GoJson(*b), ",\n");
  }
  diff += "  }\n";
  errs.push_back(FieldForbidden("spec", StrCat(kPodUpdateForbidden, "\n", diff)));
}

// ---- core: other kinds ----

void ValidateNode(const Json& obj, const Json* old, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (const Json* taints = ArrAt(spec, "taints")) {
    std::map<std::string, std::set<std::string>> seen;  // effect -> keys
    for (size_t i = 0; i < taints->size(); ++i) {
      const Json& t = (*taints)[i];
      std::string p = Index("spec.taints", i);
      std::string key = StrAt(t, "key"), value = StrAt(t, "value"), effect = StrAt(t, "effect");
      CheckQualifiedName(Child(p, "key"), key, errs);
      CheckLabelValue(Child(p, "value"), value, errs);
      if (effect.empty()) {
        errs.push_back(FieldRequired(Child(p, "effect"), ""));
      } else if (std::find(kTaintEffects.begin(), kTaintEffects.end(), effect) ==
                 kTaintEffects.end()) {
        errs.push_back(FieldNotSupported(Child(p, "effect"), Quote(effect), kTaintEffects));
      }
      if (!seen[effect].insert(key).second) {
        FieldError dup = FieldDuplicate(p, GoStruct(t,
                                                    {{"key", "Key"},
                                                     {"value", "Value"},
                                                     {"effect", "Effect"},
                                                     {"timeAdded", "TimeAdded"}},
                                                    {"key", "value", "effect"}));
        dup.body += ": taints must be unique by key and effect pair";
        errs.push_back(std::move(dup));
      }
    }
  }
  if (old == nullptr) return;
  const Json& old_spec = ObjAt(*old, "spec");
  if (ArrSize(old_spec, "podCIDRs") > 0 &&
      !SameValue(At(old_spec, "podCIDRs"), At(spec, "podCIDRs"))) {
    errs.push_back(FieldForbidden("spec.podCIDRs",
                                  "node updates may not change podCIDR except from \"\" to valid"));
  }
  std::string old_provider = StrAt(old_spec, "providerID");
  if (!old_provider.empty() && old_provider != StrAt(spec, "providerID")) {
    errs.push_back(FieldForbidden(
        "spec.providerID", "node updates may not change providerID except from \"\" to valid"));
  }
}

bool IsStandardFinalizer(std::string_view f) {
  return f == "kubernetes" || f == "orphan" || f == "foregroundDeletion";
}

void ValidateNamespace(const Json& obj, Errs& errs) {
  const Json* fins = ArrAt(ObjAt(obj, "spec"), "finalizers");
  if (fins == nullptr) return;
  for (const Json& f : *fins) {
    if (!f.is_string()) continue;
    std::string name = f.get<std::string>();
    CheckQualifiedName("spec.finalizers", name, errs);
    if (name.find('/') == std::string::npos && !IsStandardFinalizer(name)) {
      errs.push_back(FieldInvalid("spec.finalizers", Quote(name),
                                  "name is neither a standard finalizer name nor is it fully "
                                  "qualified"));
    }
  }
}

void ImmutableWhenSet(const Json& obj, const Json* old,
                      std::initializer_list<std::string_view> bags, Errs& errs) {
  if (old == nullptr || BoolAt(*old, "immutable") != std::optional<bool>(true)) return;
  if (BoolAt(obj, "immutable") != std::optional<bool>(true)) {
    errs.push_back(FieldForbidden("immutable", "field is immutable when `immutable` is set"));
  }
  for (std::string_view bag : bags) {
    if (!SameValue(At(obj, bag), At(*old, bag))) {
      errs.push_back(FieldForbidden(bag, "field is immutable when `immutable` is set"));
    }
  }
}

void ValidateConfigMap(const Json& obj, const Json* old, Errs& errs) {
  ImmutableWhenSet(obj, old, {"data", "binaryData"}, errs);
  const Json& data = ObjAt(obj, "data");
  const Json& binary = ObjAt(obj, "binaryData");
  for (auto it = data.begin(); it != data.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()), e));
    }
    if (binary.contains(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()),
                                  "duplicate of key present in binaryData"));
    }
  }
  for (auto it = binary.begin(); it != binary.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("binaryData", it.key()), Quote(it.key()), e));
    }
  }
}

void ValidateSecret(const Json& obj, const Json* old, Errs& errs) {
  std::string type = StrAt(obj, "type");
  if (old != nullptr) {  // ValidateSecretUpdate: these come before the secret's own rules
    std::string old_type = StrAt(*old, "type");
    if ((type.empty() ? "Opaque" : type) != (old_type.empty() ? "Opaque" : old_type)) {
      errs.push_back(FieldInvalid("type", Quote(type.empty() ? "Opaque" : type), kImmutable));
    }
    ImmutableWhenSet(obj, old, {"data"}, errs);
  }
  // stringData is merged into data by the v1 conversion before validation.
  Json data = ObjAt(obj, "data");
  const Json& string_data = ObjAt(obj, "stringData");
  for (auto it = string_data.begin(); it != string_data.end(); ++it) data[it.key()] = it.value();
  for (auto it = data.begin(); it != data.end(); ++it) {
    for (std::string& e : ConfigKeyErrors(it.key())) {
      errs.push_back(FieldInvalid(KeyOf("data", it.key()), Quote(it.key()), e));
    }
  }
  auto require = [&](std::string_view key) {
    if (!data.contains(key)) errs.push_back(FieldRequired(KeyOf("data", key), ""));
  };
  if (type == "kubernetes.io/service-account-token") {
    if (StrAt(ObjAt(MetaOf(obj), "annotations"), "kubernetes.io/service-account.name").empty()) {
      errs.push_back(FieldRequired("metadata.annotations[kubernetes.io/service-account.name]", ""));
    }
  } else if (type == "kubernetes.io/dockercfg") {
    require(".dockercfg");
  } else if (type == "kubernetes.io/dockerconfigjson") {
    require(".dockerconfigjson");
  } else if (type == "kubernetes.io/basic-auth") {
    if (!data.contains("username") && !data.contains("password")) {
      require("username");
      require("password");
    }
  } else if (type == "kubernetes.io/ssh-auth") {
    const Json* key = At(data, "ssh-privatekey");
    if (key == nullptr || (key->is_string() && key->get_ref<const std::string&>().empty())) {
      errs.push_back(FieldRequired("data[ssh-privatekey]", ""));
    }
  } else if (type == "kubernetes.io/tls") {
    require("tls.crt");
    require("tls.key");
  }
}

void ValidateService(const Json& obj, Errs& errs) {
  std::string name = MetaOf(obj).is_object() ? StrAt(MetaOf(obj), "name") : "";
  if (!name.empty() && api::IsDns1123Subdomain(name).empty()) {
    for (const std::string& e : api::IsDns1035Label(name)) {
      errs.push_back(FieldInvalid("metadata.name", Quote(name), e));
    }
  }
  const Json& spec = ObjAt(obj, "spec");
  std::string type = StrAt(spec, "type");
  bool headless = StrAt(spec, "clusterIP") == "None";
  const Json* ports = ArrAt(spec, "ports");
  size_t nports = ports == nullptr ? 0 : ports->size();
  if (nports == 0 && !headless && type != "ExternalName") {
    errs.push_back(FieldRequired("spec.ports", ""));
  }
  if (type == "ExternalName") {
    std::string cname = StrAt(spec, "externalName");
    if (!cname.empty() && cname.back() == '.') cname.pop_back();
    if (cname.empty()) {
      errs.push_back(FieldRequired("spec.externalName", ""));
    } else {
      CheckDnsSubdomain("spec.externalName", cname, errs);
    }
  }
  std::set<std::string> names;
  for (size_t i = 0; i < nports; ++i) {
    const Json& port = (*ports)[i];
    std::string p = Index("spec.ports", i);
    std::string pname = StrAt(port, "name");
    if (nports > 1 && pname.empty()) {
      errs.push_back(FieldRequired(Child(p, "name"), ""));
    } else if (!pname.empty()) {
      CheckDnsLabel(Child(p, "name"), pname, errs);
      if (!names.insert(pname).second)
        errs.push_back(FieldDuplicate(Child(p, "name"), Quote(pname)));
    }
    int64_t num = IntAt(port, "port").value_or(0);
    if (std::string e = PortNumError(num); !e.empty()) {
      errs.push_back(FieldInvalid(Child(p, "port"), RenderInt(num), e));
    }
    NotSupportedIfSet(port, "protocol", Child(p, "protocol"), {"SCTP", "TCP", "UDP"}, errs);
    if (const Json* target = At(port, "targetPort")) {
      if (std::optional<int64_t> tp = IntOf(*target)) {
        if (std::string e = PortNumError(*tp); !e.empty()) {
          errs.push_back(FieldInvalid(Child(p, "targetPort"), RenderInt(*tp), e));
        }
      } else if (target->is_string()) {
        for (std::string& e : PortNameErrors(target->get<std::string>())) {
          errs.push_back(
              FieldInvalid(Child(p, "targetPort"), Quote(target->get<std::string>()), e));
        }
      }
    }
  }
  ValidateLabelMap(At(spec, "selector"), "spec.selector", errs);
  NotSupportedIfSet(spec, "sessionAffinity", "spec.sessionAffinity", {"ClientIP", "None"}, errs);
  NotSupportedIfSet(spec, "type", "spec.type",
                    {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"}, errs);
}

void ValidateLease(const Json& obj, Errs& errs) {
  const Json& spec = ObjAt(obj, "spec");
  if (std::optional<int64_t> d = IntAt(spec, "leaseDurationSeconds"); d && *d <= 0) {
    errs.push_back(
        FieldInvalid("spec.leaseDurationSeconds", RenderInt(*d), "must be greater than 0"));
  }
  if (std::optional<int64_t> t = IntAt(spec, "leaseTransitions"); t && *t < 0) {
    errs.push_back(FieldInvalid("spec.leaseTransitions", RenderInt(*t), kNonNegative));
  }
  if (!StrAt(spec, "preferredHolder").empty() && StrAt(spec, "strategy").empty()) {
    errs.push_back(
        FieldForbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"));
  }
}

// The internal core.Event's fields and their names in the versioned JSON.
struct EventFields {
  const char* involved_object;  // regarding
  const char* message;          // note
  const char* reporting_controller;
  const char* source;           // deprecatedSource
  const char* first_timestamp;  // deprecatedFirstTimestamp
  const char* last_timestamp;   // deprecatedLastTimestamp
  const char* count;            // deprecatedCount
};
constexpr EventFields kCoreEvent = {"involvedObject", "message",        "reportingComponent",
                                    "source",         "firstTimestamp", "lastTimestamp",
                                    "count"};
constexpr EventFields kEventsV1 = {"regarding",
                                   "note",
                                   "reportingController",
                                   "deprecatedSource",
                                   "deprecatedFirstTimestamp",
                                   "deprecatedLastTimestamp",
                                   "deprecatedCount"};

bool TimeSet(const Json& obj, std::string_view key) {
  const Json* v = At(obj, key);
  return v != nullptr && !(v->is_string() && v->get_ref<const std::string&>().empty());
}

std::string RenderObjectReference(const Json& ref) {
  return GoStruct(
      ref,
      {{"kind", "Kind"},
       {"namespace", "Namespace"},
       {"name", "Name"},
       {"uid", "UID"},
       {"apiVersion", "APIVersion"},
       {"resourceVersion", "ResourceVersion"},
       {"fieldPath", "FieldPath"}},
      {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"});
}

// legacyValidateEvent + (events.k8s.io) ValidateEventCreate/ValidateEventUpdate.
void ValidateEvent(const Json& obj, const Json* old, bool events_v1, Errs& errs) {
  const EventFields& f = events_v1 ? kEventsV1 : kCoreEvent;
  std::string ns = StrAt(MetaOf(obj), "namespace");
  const Json& involved = ObjAt(obj, f.involved_object);
  std::string involved_ns = StrAt(involved, "namespace");
  std::string controller = StrAt(obj, f.reporting_controller);
  // The legacy rules name the field after the request's API: reportingComponent in core/v1.
  std::string controller_path = events_v1 ? "reportingController" : "reportingComponent";
  auto ns_mismatch = [&] {
    errs.push_back(FieldInvalid("involvedObject.namespace", Quote(involved_ns),
                                "does not match event.namespace"));
  };
  if (!TimeSet(obj, "eventTime")) {
    if (involved_ns.empty()) {
      if (!ns.empty() && ns != "default") ns_mismatch();
    } else if (ns != involved_ns) {
      ns_mismatch();
    }
  } else {
    if (involved_ns.empty() && ns != "default" && ns != "kube-system") ns_mismatch();
    if (controller.empty()) errs.push_back(FieldRequired(controller_path, ""));
    CheckQualifiedName(controller_path, controller, errs);
    std::string instance = StrAt(obj, "reportingInstance");
    if (instance.empty()) errs.push_back(FieldRequired("reportingInstance", ""));
    if (instance.size() > 128) {
      errs.push_back(FieldInvalid("reportingInstance", "\"\"", "can have at most 128 characters"));
    }
    std::string action = StrAt(obj, "action");
    if (action.empty()) errs.push_back(FieldRequired("action", ""));
    if (action.size() > 128)
      errs.push_back(FieldInvalid("action", "\"\"", "can have at most 128 characters"));
    std::string reason = StrAt(obj, "reason");
    if (reason.empty()) errs.push_back(FieldRequired("reason", ""));
    if (reason.size() > 128)
      errs.push_back(FieldInvalid("reason", "\"\"", "can have at most 128 characters"));
    if (StrAt(obj, f.message).size() > 1024) {
      errs.push_back(FieldInvalid("message", "\"\"", "can have at most 1024 characters"));
    }
  }
  CheckDnsSubdomain("namespace", ns, errs);
  if (!events_v1) return;

  const Json& series = ObjAt(obj, "series");
  auto validate_series = [&] {
    if (!Has(obj, "series")) return;
    if (IntAt(series, "count").value_or(0) < 2) {
      errs.push_back(FieldInvalid("series.count", "\"\"", "should be at least 2"));
    }
    if (!TimeSet(series, "lastObservedTime")) {
      errs.push_back(FieldRequired("series.lastObservedTime", ""));
    }
  };
  if (old == nullptr) {
    validate_series();
    if (!TimeSet(obj, "eventTime")) errs.push_back(FieldRequired("eventTime", ""));
    std::string type = StrAt(obj, "type");
    if (type != "Normal" && type != "Warning") {
      errs.push_back(FieldInvalid("type", "\"\"", StrCat("has invalid value: ", type)));
    }
    if (TimeSet(obj, f.first_timestamp)) {
      errs.push_back(FieldInvalid("deprecatedFirstTimestamp", "\"\"", "needs to be unset"));
    }
    if (TimeSet(obj, f.last_timestamp)) {
      errs.push_back(FieldInvalid("deprecatedLastTimestamp", "\"\"", "needs to be unset"));
    }
    if (IntAt(obj, f.count).value_or(0) != 0) {
      errs.push_back(FieldInvalid("deprecatedCount", "\"\"", "needs to be unset"));
    }
    const Json& source = ObjAt(obj, f.source);
    if (!StrAt(source, "component").empty() || !StrAt(source, "host").empty()) {
      errs.push_back(FieldInvalid("deprecatedSource", "\"\"", "needs to be unset"));
    }
    return;
  }
  if (!SameValue(At(obj, "series"), At(*old, "series"))) validate_series();
  auto immutable = [&](const char* key, std::string_view path, const std::string& repr) {
    if (!SameValue(At(obj, key), At(*old, key)))
      errs.push_back(FieldInvalid(path, repr, kImmutable));
  };
  auto str_repr = [&](const char* key) { return Quote(StrAt(obj, key)); };
  immutable(f.involved_object, "involvedObject", RenderObjectReference(involved));
  immutable("reason", "reason", str_repr("reason"));
  immutable(f.message, "message", str_repr(f.message));
  immutable(f.source, "source",
            GoStruct(ObjAt(obj, f.source), {{"component", "Component"}, {"host", "Host"}},
                     {"component", "host"}));
  immutable(f.first_timestamp, "firstTimestamp", Render(At(obj, f.first_timestamp)));
  immutable(f.last_timestamp, "lastTimestamp", Render(At(obj, f.last_timestamp)));
  immutable(f.count, "count", RenderInt(IntAt(obj, f.count).value_or(0)));
  immutable("type", "type", str_repr("type"));
  immutable("eventTime", "eventTime", Render(At(obj, "eventTime")));
  immutable("action", "action", str_repr("action"));
  immutable("related", "related",
            Has(obj, "related") ? RenderObjectReference(ObjAt(obj, "related")) : "null");
  immutable(f.reporting_controller, "reportingController", Quote(controller));
  immutable("reportingInstance", "reportingInstance", str_repr("reportingInstance"));
}

}  // namespace spiderpool::kube::testing::internal::builtin
