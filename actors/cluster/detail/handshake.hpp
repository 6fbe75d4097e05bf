#pragma once
// How two nodes prove to each other that they know the cluster's secret,
// without sending it: each sends a fresh random nonce, and each answers
// with HMAC-SHA256(secret, role, both node ids, both nonces). The caller
// checks the gateway's answer before it sends anything else, the gateway
// the caller's before it takes an ask. Fresh nonces on both sides: a
// recorded answer is worth nothing in another handshake. The node ids are
// the CAF node ids each side sees (the caller: its own and the one its
// connection reached; the gateway: the sender's and its own): a process in
// the middle that passes one node's nonce to another and the answer back
// reaches the caller under its own id, so the answer it passes back is for
// another pair of nodes and the caller refuses it.
//
// Both sides then hold a session token the handshake never sent (another
// HMAC of the same transcript). Every ask, cancel and event between the two
// names it: CAF 0.17 takes the sender of a message from another node on
// that node's word, so the sender alone proves nothing.

#include <string>
#include <string_view>

namespace troupe::handshake {

// What both answers are bound to.
struct transcript {
  std::string_view caller_node;   // caf::to_string of the caller's node id
  std::string_view gateway_node;  // … and of the gateway's
  std::string_view caller_nonce;
  std::string_view gateway_nonce;
};

// 32 random bytes from OpenSSL's generator, as hex.
std::string nonce();

// Whether `text` has the shape nonce() gives (64 lowercase hex digits):
// what comes from a peer is checked before it goes into a MAC.
bool is_nonce(std::string_view text);

// The gateway's answer to the caller's nonce, and the caller's to the gateway's.
std::string gateway_proof(std::string_view secret, const transcript& t);
std::string caller_proof(std::string_view secret, const transcript& t);

// The token both sides hold once the caller's proof is taken.
std::string session_token(std::string_view secret, const transcript& t);

// In constant time: how long the comparison takes tells nothing of the expected proof.
bool same(std::string_view a, std::string_view b);

}  // namespace troupe::handshake
