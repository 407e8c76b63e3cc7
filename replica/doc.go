// Package replica replicates a ttldb.DB over hashicorp/raft: a cluster of
// nodes (three, typically) where every write goes through the raft log and
// only the leader's TTL monitor chooses what expires.
//
// A node's change streams (Node.DB().Watch) deliver committed writes only,
// and a resume token taken on one node resumes on any other that holds
// the op in its change-stream buffer (open the nodes with
// ttldb.ChangeStreamBufferOptions.AttachAtOpen in Config.DBOptions).
//
// Raft's TCP transport is plaintext and unauthenticated as hashicorp/raft
// ships it; this package's TLSStreamLayer puts mutual TLS under it (see
// NewTLSTransport and MutualTLSConfig).
package replica
