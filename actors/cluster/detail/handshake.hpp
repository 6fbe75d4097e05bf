#pragma once
// How two nodes prove to each other that they know the cluster's secret,
// without sending it: each sends a fresh random nonce, and each answers
// with HMAC-SHA256(secret, role, both nonces). The caller checks the
// gateway's answer before it sends anything else, the gateway the caller's
// before it takes an ask. Fresh nonces on both sides: a recorded answer is
// worth nothing in another handshake.

#include <string>
#include <string_view>

namespace troupe::handshake {

// 32 random bytes from OpenSSL's generator, as hex.
std::string nonce();

// The gateway's answer to the caller's nonce, and the caller's to the gateway's.
std::string gateway_proof(std::string_view secret, std::string_view caller_nonce, std::string_view gateway_nonce);
std::string caller_proof(std::string_view secret, std::string_view caller_nonce, std::string_view gateway_nonce);

// In constant time: how long the comparison takes tells nothing of the expected proof.
bool same(std::string_view a, std::string_view b);

}  // namespace troupe::handshake
