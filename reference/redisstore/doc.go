// Package redisstore is the Redis reference.Store: a record is one key
// claimed with SET NX PX (the TTL is Redis's own expiry), and completion,
// release and reclaiming an in-flight record whose lease ended are Lua
// scripts, each atomic and fenced by the owner's token. Durability is that
// of the server's persistence settings: without AOF/RDB a restart forgets
// every record (and so wedges none).
//
// Of idemcheck's packages it imports only reference.
package redisstore
