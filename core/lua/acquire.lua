-- redfence acquire: take the lease and issue a fencing token in one atomic step.
--
-- KEYS[1] = lock key   (lock:{resource})
-- KEYS[2] = fence key  (fence:{resource}); both carry the same hash tag so that
--           Redis Cluster keeps them in one slot, as a script requires.
-- ARGV[1] = owner token: fresh per acquire, never a worker id.
-- ARGV[2] = lease in milliseconds, validated positive by the client.
-- ARGV[3] = "1" when this script issues the fence (Redis counter as fence
--           source), "0" when the fence comes from elsewhere (Postgres).
--
-- Returns {status, fence}:
--   {1, "<fence>"} acquired now;
--   {2, "<fence>"} this owner token already holds the lease: a retry after a
--                  lost reply learns that its first attempt won (idempotent);
--   {0, false}     another owner holds the lease.
-- The fence travels as the counter's own string (read back with GET), never
-- through a Lua number: Lua 5.1 numbers are doubles, and tostring() prints
-- only 14 significant digits, so a counter past 10^14 would come out as
-- "1.2345678901234e+14".

local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
    if ARGV[3] == '1' then
        return {2, redis.call('GET', KEYS[2])}
    end
    return {2, false}
end
if holder then
    return {0, false}
end

-- INCR comes before PSETEX: if the counter cannot be incremented (for
-- example WRONGTYPE) the script aborts here and no lease without a fence is
-- left behind. Gaps in the counter are harmless; only order matters.
local fence = false
if ARGV[3] == '1' then
    redis.call('INCR', KEYS[2])
    fence = redis.call('GET', KEYS[2])
end
redis.call('PSETEX', KEYS[1], ARGV[2], ARGV[1])
return {1, fence}
