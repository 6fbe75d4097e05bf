#include "runtime/tools/detail/schema_hazard.hpp"

#include <valijson/internal/json_pointer.hpp>
#include <valijson/internal/uri.hpp>

#include <boost/json/value.hpp>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace troupe {

namespace json = boost::json;

namespace {

// Boost.JSON copies and serializes by recursion too; text it parses nests at
// most 32 deep, so 64 leaves room for schemas built in code.
constexpr std::size_t max_nesting = 64;
// valijson takes 1.6 to 2 KB of stack per schema level it compiles (measured,
// optimised build): 1024 levels stay within 2 MB of a thread's 8.
constexpr std::size_t max_compile_depth = 1024;
// Validating recurses once per schema applied to the same value, for each
// level of the value (at most 32 from parsed text).
constexpr std::size_t max_same_value_chain = 32;
// valijson resolves a pointer by recursing once per token, empty ones too.
constexpr std::size_t max_pointer_tokens = 2 * max_nesting;
constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

std::string at(std::string_view path) {
  constexpr std::size_t limit = 80;
  if (path.empty()) return "the root";
  return path.size() <= limit ? std::string(path) : std::string(path.substr(0, limit)) + "…";
}

// How deep containers nest, or max_nesting + 1 as soon as it is exceeded.
std::size_t nesting(const json::object& root) {
  std::vector<std::pair<const json::value*, std::size_t>> todo;
  for (const auto& m : root) todo.emplace_back(&m.value(), 2);
  std::size_t deepest = 1;
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_object() && !v->is_array()) continue;
    if (depth > max_nesting) return depth;
    deepest = std::max(deepest, depth);
    if (const auto* o = v->if_object())
      for (const auto& m : *o) todo.emplace_back(&m.value(), depth + 1);
    else
      for (const auto& e : v->get_array()) todo.emplace_back(&e, depth + 1);
  }
  return deepest;
}

// Where valijson finds a $ref's target, decoded as it decodes it: the part
// after '#' is a pointer into this document whatever precedes it (it fetches
// nothing, and resolves a relative document against this one). A target that
// is not an object is null: valijson either takes it as a boolean schema or
// refuses it itself.
std::variant<const json::object*, std::string> resolve(const json::object& root, const std::string& ref) {
  const auto hash = ref.find('#');
  std::string pointer = hash == std::string::npos ? std::string() : ref.substr(hash + 1);
  pointer.erase(pointer.find_last_not_of('/') + 1);
  if (static_cast<std::size_t>(std::count(pointer.begin(), pointer.end(), '/')) > max_pointer_tokens)
    return "has a pointer of more than " + std::to_string(max_pointer_tokens) + " tokens";
  const json::value* here = nullptr;  // null while at the root object
  for (std::size_t pos = 0; pos < pointer.size();) {
    if (pointer[pos] != '/') return std::string("is not a JSON pointer");
    const std::size_t end = std::min(pointer.find('/', pos + 1), pointer.size());
    std::string token;
    try {
      token = valijson::internal::json_pointer::extractReferenceToken(pointer.cbegin() + static_cast<long>(pos) + 1,
                                                                      pointer.cbegin() + static_cast<long>(end));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    pos = end;
    if (token.empty()) continue;
    const std::string missing = "does not resolve within the schema (no \"" + token + "\")";
    if (here && here->is_array()) {
      const json::array& a = here->get_array();
      std::size_t index = 0;
      try {
        index = token == "-" ? a.size() : std::stoul(token);
      } catch (const std::exception&) {
        return missing;
      }
      if (index >= a.size()) return missing;
      here = &a[index];
    } else if (const json::object* o = here ? here->if_object() : &root) {
      here = o->if_contains(token);
      if (!here) return missing;
    } else {
      return missing;
    }
  }
  return here ? here->if_object() : &root;
}

// valijson reads an "id" that is a string, a number, a boolean or empty.
bool has_id(const json::object& o, bool& relative) {
  const json::value* id = o.if_contains("id");
  if (!id) return false;
  const bool empty = (id->is_object() && id->get_object().empty()) || (id->is_array() && id->get_array().empty());
  if (!id->is_string() && !id->is_number() && !id->is_bool() && !empty) return false;
  const std::string text = id->is_string() ? std::string(id->get_string()) : std::string();
  relative =
      !id->is_string() || !(valijson::internal::uri::isUriAbsolute(text) || valijson::internal::uri::isUrn(text));
  return true;
}

struct schema_node {
  const json::object* object;
  std::string path;                                // where it was first found
  std::vector<std::pair<std::size_t, bool>> next;  // a subschema, and whether it applies to the same value
  const json::string* ref = nullptr;
  bool id = false;
  bool relative_id = false;
};

// The schema objects valijson compiles, as a graph: the subschemas of each
// keyword it reads, and the target of each $ref in place of its node.
class schema_graph {
 public:
  explicit schema_graph(const json::object& root) : root_(root) { node(root, ""); }

  std::optional<std::string> build() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const json::object& o = *nodes_[i].object;
      const std::string path = nodes_[i].path;
      std::vector<std::pair<std::size_t, bool>> next;
      const auto sub = [&](const json::value* v, const std::string& where, bool same_value) {
        if (const json::object* s = v ? v->if_object() : nullptr) next.emplace_back(node(*s, path + where), same_value);
      };
      const auto each = [&](const json::value* v, const std::string& where, bool same_value) {
        if (const json::array* a = v ? v->if_array() : nullptr)
          for (std::size_t k = 0; k < a->size(); ++k) sub(&(*a)[k], where + "/" + std::to_string(k), same_value);
        else if (const json::object* m = v ? v->if_object() : nullptr)
          for (const auto& member : *m) sub(&member.value(), where + "/" + std::string(member.key()), same_value);
      };
      if (const json::value* ref = o.if_contains("$ref")) {
        // Only the reference counts: valijson reads nothing else beside it.
        if (const json::string* text = ref->if_string()) {
          nodes_[i].ref = text;
          auto target = resolve(root_, std::string(*text));
          if (auto* why = std::get_if<std::string>(&target))
            return "its \"$ref\": \"" + at(*text) + "\" at " + at(path) + " " + *why;
          if (const json::object* t = std::get<const json::object*>(target)) {
            const std::string ref_path(text->subview(std::min(text->find('#') + 1, text->size())));
            next.emplace_back(node(*t, ref_path), true);
          }
        }
      } else {
        for (const char* k : {"allOf", "anyOf", "oneOf"}) each(o.if_contains(k), std::string("/") + k, true);
        sub(o.if_contains("not"), "/not", true);
        if (o.contains("if"))
          for (const char* k : {"if", "then", "else"}) sub(o.if_contains(k), std::string("/") + k, true);
        if (const json::value* d = o.if_contains("dependencies"); d && d->is_object()) each(d, "/dependencies", true);
        for (const char* k : {"contains", "propertyNames", "additionalProperties"})
          sub(o.if_contains(k), std::string("/") + k, false);
        if (const json::value* items = o.if_contains("items"); items && items->is_array()) {
          each(items, "/items", false);
          sub(o.if_contains("additionalItems"), "/additionalItems", false);
        } else {
          sub(items, "/items", false);
        }
        for (const char* k : {"properties", "patternProperties"})
          if (const json::value* p = o.if_contains(k); p && p->is_object()) each(p, std::string("/") + k, false);
        nodes_[i].id = has_id(o, nodes_[i].relative_id);
      }
      nodes_[i].next = std::move(next);
    }
    return std::nullopt;
  }

  // A schema that applies itself to the same value again (through $ref,
  // allOf and the like) sends valijson round forever; otherwise the longest
  // such chain.
  std::variant<std::size_t, std::string> same_value_chain() const {
    enum : char { unseen, open, done };
    std::vector<char> state(nodes_.size(), unseen);
    std::vector<std::size_t> chain(nodes_.size(), 0);
    std::size_t longest = 0;
    for (std::size_t start = 0; start < nodes_.size(); ++start) {
      if (state[start] != unseen) continue;
      std::vector<std::pair<std::size_t, std::size_t>> stack{{start, 0}};
      state[start] = open;
      while (!stack.empty()) {
        const std::size_t v = stack.back().first;
        const std::size_t e = stack.back().second++;
        if (e < nodes_[v].next.size()) {
          const auto [w, same_value] = nodes_[v].next[e];
          if (!same_value) continue;
          if (state[w] == open)
            return "a cycle of \"$ref\" (or allOf, anyOf, oneOf, not, if/then/else, dependencies) leads from " +
                   at(nodes_[w].path) + " back to it without descending into the value";
          if (state[w] == unseen) {
            state[w] = open;
            stack.emplace_back(w, 0);
          } else {
            chain[v] = std::max(chain[v], chain[w] + 1);
          }
          continue;
        }
        state[v] = done;
        longest = std::max(longest, chain[v]);
        stack.pop_back();
        if (!stack.empty()) chain[stack.back().first] = std::max(chain[stack.back().first], chain[v] + 1);
      }
    }
    return longest;
  }

  // An upper bound on how deep valijson's compilation recurses. It compiles
  // each schema it reaches once per cache key (the $ref text, in the scope
  // an "id" sets), so within a strongly connected part it can go round once
  // per distinct $ref there, each time descending at most `depth` levels,
  // and again in each scope an "id" there opens; a relative "id" there
  // opens a new scope on every pass and is refused.
  std::variant<std::size_t, std::string> compile_depth(std::size_t depth) const {
    const std::size_t n = nodes_.size();
    const auto component = strongly_connected();
    const std::size_t count = component.empty() ? 0 : *std::max_element(component.begin(), component.end()) + 1;
    std::vector<std::vector<std::size_t>> members(count);
    for (std::size_t v = 0; v < n; ++v) members[component[v]].push_back(v);
    // Components are numbered sinks first, so each one's successors are done.
    std::vector<std::size_t> deepest(count, 0);
    for (std::size_t c = 0; c < count; ++c) {
      bool cyclic = members[c].size() > 1;
      std::unordered_set<std::string_view> refs;
      std::size_t ids = 0;
      std::size_t below = 0;
      for (std::size_t v : members[c]) {
        if (nodes_[v].ref) refs.insert(std::string_view(*nodes_[v].ref));
        ids += nodes_[v].id ? 1 : 0;
        for (const auto& [w, _] : nodes_[v].next) {
          if (w == v) cyclic = true;
          if (component[w] != c) below = std::max(below, deepest[component[w]]);
        }
      }
      std::size_t levels = 1;
      if (cyclic) {
        for (std::size_t v : members[c])
          if (nodes_[v].relative_id)
            return "a relative \"id\" at " + at(nodes_[v].path) +
                   " in a recursive part of the schema opens a new scope on every pass";
        levels = (refs.size() + 1) * (depth + 1) * (ids + 1);
      }
      deepest[c] = std::min(levels + below, max_compile_depth + 1);
    }
    return deepest[component[0]];
  }

 private:
  std::size_t node(const json::object& o, std::string path) {
    const auto [it, fresh] = index_.try_emplace(&o, nodes_.size());
    if (fresh) nodes_.push_back(schema_node{&o, std::move(path), {}, nullptr, false, false});
    return it->second;
  }

  // Tarjan's algorithm without recursion: each node's component.
  std::vector<std::size_t> strongly_connected() const {
    const std::size_t n = nodes_.size();
    std::vector<std::size_t> order(n, none), low(n, 0), component(n, none), open;
    std::vector<bool> on_stack(n, false);
    std::size_t counter = 0;
    std::size_t components = 0;
    for (std::size_t start = 0; start < n; ++start) {
      if (order[start] != none) continue;
      std::vector<std::pair<std::size_t, std::size_t>> calls;
      const auto enter = [&](std::size_t v) {
        order[v] = low[v] = counter++;
        open.push_back(v);
        on_stack[v] = true;
        calls.emplace_back(v, 0);
      };
      enter(start);
      while (!calls.empty()) {
        const std::size_t v = calls.back().first;
        const std::size_t e = calls.back().second++;
        if (e < nodes_[v].next.size()) {
          const std::size_t w = nodes_[v].next[e].first;
          if (order[w] == none)
            enter(w);
          else if (on_stack[w])
            low[v] = std::min(low[v], order[w]);
          continue;
        }
        if (low[v] == order[v]) {
          std::size_t w = none;
          while (w != v) {
            w = open.back();
            open.pop_back();
            on_stack[w] = false;
            component[w] = components;
          }
          ++components;
        }
        calls.pop_back();
        if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[v]);
      }
    }
    return component;
  }

  const json::object& root_;
  std::vector<schema_node> nodes_;
  std::unordered_map<const json::object*, std::size_t> index_;
};

}  // namespace

std::optional<std::string> schema_hazard(const json::object& schema) {
  const std::size_t depth = nesting(schema);
  if (depth > max_nesting) return "it nests more than " + std::to_string(max_nesting) + " levels deep";
  schema_graph graph(schema);
  if (auto why = graph.build()) return why;
  const auto chain = graph.same_value_chain();
  if (const auto* why = std::get_if<std::string>(&chain)) return *why;
  if (std::get<std::size_t>(chain) > max_same_value_chain)
    return "it applies more than " + std::to_string(max_same_value_chain) +
           " schemas in a chain to one value (through \"$ref\", allOf and the like)";
  const auto levels = graph.compile_depth(depth);
  if (const auto* why = std::get_if<std::string>(&levels)) return *why;
  if (std::get<std::size_t>(levels) > max_compile_depth)
    return "its references recurse more than " + std::to_string(max_compile_depth) + " levels deep";
  return std::nullopt;
}

}  // namespace troupe
