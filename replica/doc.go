// Package replica replicates a ttldb.DB over hashicorp/raft: a cluster of
// nodes (three, typically) where every write goes through the raft log and
// only the leader's TTL monitor chooses what expires.
//
// Raft's TCP transport is plaintext and unauthenticated as hashicorp/raft
// ships it; this package's TLSStreamLayer puts mutual TLS under it (see
// NewTLSTransport and MutualTLSConfig).
package replica
