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
-- fence is false (a nil reply) when ARGV[3] is "0".
-- The fence travels as a decimal string, never as a Lua number: Lua 5.1
-- numbers are doubles, exact only up to 2^53, and both tostring() and the
-- number-to-integer reply would misprint or round a counter past that
-- (tostring() already past 10^14: "1.2345678901234e+14"). Below 2^53 the
-- number INCR returned is exact and '%d' prints every digit; from 2^53 on
-- the counter is read back with GET, its own string. Why not always GET: a
-- call inside a script costs the server about as much as the rest of the
-- acquire's bookkeeping, on every acquire.

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
    local counter = redis.call('INCR', KEYS[2])
    if counter < 9007199254740992 then
        fence = string.format('%d', counter)
    else
        fence = redis.call('GET', KEYS[2])
    end
end
redis.call('PSETEX', KEYS[1], ARGV[2], ARGV[1])
return {1, fence}
