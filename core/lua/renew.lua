-- redfence renew: compare-and-PEXPIRE.
--
-- KEYS[1] = lock key; ARGV[1] = owner token; ARGV[2] = new lease in ms.
-- Returns 1 when this owner's lease was extended, 0 when the lease is gone or
-- belongs to another owner: the caller must then treat its lease as lost.
-- Renewal never issues a new fence: ownership has not changed hands.

if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
