-- redfence release: compare-and-delete.
--
-- KEYS[1] = lock key; ARGV[1] = owner token.
-- Returns 1 when this owner's lease was deleted, 0 when the lease had already
-- expired or belongs to another owner (whose lock is left untouched).
-- GET and DEL must be one atomic step: between two separate commands the
-- lease could expire and a new owner could take it.

if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
