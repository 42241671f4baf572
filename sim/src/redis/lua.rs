//! The embedded Lua 5.1 (mlua) with Redis 7.0's script environment:
//! the `redis` library, the sandbox, deterministic `math.random`, the error
//! handler, and the reply conversion rules in both directions.
//!
//! Why most of the library is written in Lua (the `PRELUDE` below): Redis's
//! error values are Lua tables raised with `lua_error`, positions come from
//! the Lua stack, and `pcall` flattens error tables to strings. Rust
//! callbacks in mlua can only raise mlua's own error userdata, so the Rust
//! side exposes raw primitives that answer a command's errors as values
//! (`backend`, `rand48`, `sha1hex`) and the Lua side raises exactly what
//! Redis raises, from behind a C trampoline so that positions match (see
//! [`trampoline`]). The hot ones (`backend`, `backend_table`, `keys_argv`)
//! are C closures made once with the engine, kept in the prelude's locals,
//! that read their arguments off the Lua stack: mlua callbacks cost more
//! than the commands they ran (see [`backend_args`]). They raise only on a
//! memory error (the simulation's heap cap) or a panic of the simulated
//! server (see [`BackendState`]).
//!
//! Conversions (Redis 7.0, RESP2): Redis→Lua: integer → number, bulk →
//! string, nil → false, array → table, status → `{ok=...}`, error →
//! `{err=...}` (raised by `redis.call`, returned by `redis.pcall`).
//! Lua→Redis: number → integer (truncated; out of range → i64::MIN as on
//! x86), string → bulk, `{err=s}` → error, `{ok=s}` → status, other table →
//! array cut at the first nil, true → 1, false/nil → nil.
//!
//! Sandbox: globals are read-only and unknown globals raise "Script
//! attempted to access nonexistent global variable"; the library tables
//! (`redis`, `string`, `math`, `table`, `coroutine`, `_G`) and a string's
//! metatable are read-only even to `rawset`, as Redis 7 enforces in C, so no
//! script leaves state behind for the next; `os`, `io`, `debug`,
//! `print`, `require`, `dofile`, `loadfile`, `loadstring`, `getfenv`,
//! `setfenv`, `module`, `newproxy`, `package` are gone. `cjson`, `bit`,
//! `cmsgpack` and `struct` are not provided (nothing in redfence uses them).
//!
//! Bounds: a script may run at most [`INSTRUCTIONS_MAX`] VM instructions
//! (Redis would answer BUSY to others instead; a simulation must never
//! hang), Lua memory is capped at [`MEMORY_BYTES_MAX`], and replies nest at
//! most [`REPLY_DEPTH_MAX`] deep.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::os::raw::c_int;
use std::ptr::NonNull;
use std::rc::Rc;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, VmState};

use super::frame::{Frame, ARRAY_LEN_MAX};

/// Most VM instructions one script call may execute.
pub(crate) const INSTRUCTIONS_MAX: u64 = 200_000_000;
/// How often the instruction hook runs.
const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;
/// Lua heap limit per server instance.
pub(crate) const MEMORY_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Heap above which an engine handed back to the pool is fully collected
/// (`LuaEngine::reset`): 1/256 of [`MEMORY_BYTES_MAX`], so garbage carried
/// over can never bring a script near the cap, and at most
/// `POOL_MAX` (16) × 1 MiB of it is kept per thread. A warm engine (prelude,
/// libraries) holds about 85 KB before it compiles a script (measured in
/// `lua_pool.rs`'s tests); a lock's scripts add a few KB.
pub(crate) const RESET_HEAP_BYTES_MAX: usize = 1024 * 1024;
/// Lua 5.1's default collector pause (`LUAI_GCPAUSE`, percent).
const LUA_GC_PAUSE_DEFAULT: std::os::raw::c_int = 200;
/// Lua 5.1's default collector step multiplier (`LUAI_GCMUL`, percent).
const LUA_GC_STEP_MULTIPLIER_DEFAULT: std::os::raw::c_int = 200;
/// Deepest table nesting converted to a reply.
pub(crate) const REPLY_DEPTH_MAX: usize = 1000;
/// Most compiled chunks kept per thread (see [`BYTECODE`]).
const BYTECODE_CACHE_MAX: usize = 1024;
/// Most compiled scripts an engine keeps for the instances that take it
/// after its first (see `lua_pool.rs`).
const COMPILED_MAX: usize = 256;

thread_local! {
    /// Compiled chunks (Lua 5.1 bytecode, debug info kept so errors name
    /// `user_script:LINE`), by source text. Every world starts its own Lua
    /// state, and parsing the prelude and the lock's three scripts again for
    /// each was a fifth of a simulated run (profiled: `luaY_parser` under
    /// `LuaEngine::new` and `SCRIPT LOAD`); loading bytecode skips the
    /// parser. Bytecode is a pure function of the text, so sharing it
    /// between worlds cannot carry state from one run into another. Per
    /// thread, because `Lua` is not `Send`; bounded, and once full new
    /// texts are simply parsed each time.
    static BYTECODE: RefCell<BTreeMap<Vec<u8>, Rc<[u8]>>> = const { RefCell::new(BTreeMap::new()) };
}

/// Loads `text` as chunk `name` into `lua`, from cached bytecode when the
/// text was compiled before on this thread. `Err` carries Lua's message.
fn load_cached(lua: &Lua, text: &[u8], name: &str, env: Option<&Table>) -> mlua::Result<Function> {
    let cached = BYTECODE.with(|cache| cache.borrow().get(text).cloned());
    let chunk = match &cached {
        // Binary chunks need the unsafe state this engine is made with.
        Some(bytecode) => lua
            .load(&bytecode[..])
            .set_mode(mlua::chunk::ChunkMode::Binary),
        None => lua.load(text).set_mode(mlua::chunk::ChunkMode::Text),
    };
    let chunk = chunk.set_name(name);
    let chunk = match env {
        Some(env) => chunk.set_environment(env.clone()),
        None => chunk,
    };
    let function = chunk.into_function()?;
    if cached.is_none() {
        BYTECODE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.len() < BYTECODE_CACHE_MAX {
                cache.insert(text.to_vec(), function.dump(false).into());
            }
        });
    }
    Ok(function)
}

/// Redis's script library and sandbox, in Lua. Receives the Rust
/// primitives, returns `set_backend`, `run` and the sandboxed environment.
const PRELUDE: &str = r#"
local rand48, sha1hex_raw, dbg = ...
local real = _G
local type, error, select, tostring, tonumber = type, error, select, tostring, tonumber
local rawget, rawset, setmetatable, unpack, xpcall = rawget, rawset, setmetatable, unpack, xpcall
local raw_pcall, sformat, floor, ceil = pcall, string.format, math.floor, math.ceil

local backend, backend_table, keys_argv = nil, nil, nil
local function set_backend(f, ft, ka) backend, backend_table, keys_argv = f, ft, ka end

-- luaPushErrorBuff: "-CODE msg" keeps CODE; anything else becomes "ERR msg".
local function error_text(buf)
  local code, msg
  if buf:sub(1, 1) == '-' then
    local sp = buf:find(' ', 1, true)
    if sp then code, msg = buf:sub(2, sp - 1), buf:sub(sp + 1)
    else code, msg = 'ERR', buf:sub(2) end
  else
    code, msg = 'ERR', buf
  end
  msg = msg:gsub('^[\r\n]+', ''):gsub('[\r\n]+$', '')
  return code .. ' ' .. msg
end

local function lib_error(raise, text)
  local e = {err = text}
  if raise then error(e) end
  return e
end

local function call(raise, ...)
  -- Most calls pass strings only, and `backend` (C) takes them off the
  -- stack as they are. It answers nothing, before running anything, when
  -- there are none or one is not a string; only then are the arguments
  -- checked and numbers converted here, in a table (profiled: the table
  -- and the checks on every call were ~2,600 of a call's ~5,700
  -- instructions).
  local ok, reply = backend(...)
  if ok == nil then
    local n = select('#', ...)
    if n == 0 then
      return lib_error(raise, 'ERR Please specify at least one argument for this redis lib call')
    end
    local argv = {...}
    for i = 1, n do
      local v = argv[i]
      local t = type(v)
      if t == 'number' then argv[i] = sformat('%.17g', v)
      elseif t ~= 'string' then
        return lib_error(raise, 'ERR Lua redis lib command arguments must be strings or integers')
      end
    end
    ok, reply = backend_table(argv, n)
  end
  if ok then return reply end
  local e = {err = error_text('-' .. reply), ignore_error_stats_update = true}
  if raise then error(e) end
  return e
end

local redis = {}
local impls = {}
impls.call = function(...) return call(true, ...) end
redis.pcall = function(...) return call(false, ...) end
redis.error_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  if s:sub(1, 1) ~= '-' then s = '-' .. s end
  return {err = error_text(s)}
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = s}
end
impls.sha1hex = function(...)
  if select('#', ...) ~= 1 then
    error({err = 'ERR wrong number of arguments'})
  end
  local s = ...
  if type(s) == 'number' then s = tostring(s) end
  if type(s) ~= 'string' then s = '' end
  return sha1hex_raw(s)
end
impls.log = function(...)
  local n = select('#', ...)
  if n < 2 then error({err = 'ERR redis.log() requires two arguments or more.'}) end
  local level = ...
  if type(tonumber(level)) ~= 'number' then
    error({err = 'ERR First argument must be a number'})
  end
  level = tonumber(level)
  if level < 0 or level > 3 then error({err = 'ERR Invalid debug level.'}) end
end
impls.setresp = function(v)
  if v ~= 2 then error({err = 'ERR RESP version must be 2 in this simulation'}) end
end
redis.set_repl = function() end
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

-- Redis's rand48-based math.random (the C original, in Lua).
local function checkint(v, narg, fname)
  local x = tonumber(v)
  if x == nil then
    local got = (v == nil) and 'nil' or type(v)
    error(sformat("bad argument #%d to '%s' (number expected, got %s)", narg, fname, got), 4)
  end
  x = (x >= 0) and floor(x) or ceil(x)
  x = x % 4294967296
  if x >= 2147483648 then x = x - 4294967296 end
  return x
end
impls.random = function(...)
  local r = (rand48('next') % 2147483647) / 2147483647
  local n = select('#', ...)
  if n == 0 then return r end
  local a, b = ...
  if n == 1 then
    local u = checkint(a, 1, 'random')
    if not (1 <= u) then error("bad argument #1 to 'random' (interval is empty)", 3) end
    return floor(r * u) + 1
  elseif n == 2 then
    local l = checkint(a, 1, 'random')
    local u = checkint(b, 2, 'random')
    if not (l <= u) then error("bad argument #2 to 'random' (interval is empty)", 3) end
    return floor(r * (u - l + 1)) + l
  end
  error('wrong number of arguments', 3)
end
impls.randomseed = function(...)
  if select('#', ...) == 0 then
    error("bad argument #1 to 'randomseed' (number expected, got no value)", 3)
  end
  rand48('seed', checkint((...), 1, 'randomseed'))
end

-- Read-only views: reads go to the original, writes raise as in Redis.
-- Redis 7 marks its tables read-only in C, below `rawset`, so every view is
-- remembered here and the scripts' `rawset` refuses it too.
local readonly_views = setmetatable({}, {__mode = 'k'})
local function readonly(t)
  local view = setmetatable({}, {
    __index = t,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
    __metatable = false,
  })
  readonly_views[view] = true
  return view
end

-- luaB_rawset with Redis 7's read-only check: the same argument errors,
-- at the script's line, then the refusal, without one (raised in C there).
impls.rawset = function(...)
  local n = select('#', ...)
  local t, k, v = ...
  if type(t) ~= 'table' then
    local got = (n == 0) and 'no value' or type(t)
    error(sformat("bad argument #1 to 'rawset' (table expected, got %s)", got), 3)
  end
  if n < 2 then error("bad argument #2 to 'rawset' (value expected)", 3) end
  if n < 3 then error("bad argument #3 to 'rawset' (value expected)", 3) end
  if readonly_views[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end

local math_lib = {}
for k, v in pairs(math) do math_lib[k] = v end

-- luaRedisPcall: an error table is flattened to its `err` string.
local function pack(...) return {n = select('#', ...), ...} end
local function redis_pcall(...)
  local res = pack(raw_pcall(...))
  local n = res.n
  if res[1] == false and type(res[2]) == 'table' then
    local e = rawget(res[2], 'err')
    if type(e) == 'string' or type(e) == 'number' then res[2] = e end
  end
  return unpack(res, 1, n)
end

-- The second half runs once the raising functions are wrapped in C
-- trampolines (see `LuaEngine::new`).
local function finish(w)
redis.call, redis.sha1hex, redis.log, redis.setresp = w.call, w.sha1hex, w.log, w.setresp
math_lib.random, math_lib.randomseed = w.random, w.randomseed

for _, name in ipairs({'os', 'io', 'debug', 'print', 'require', 'dofile', 'loadfile',
    'loadstring', 'getfenv', 'setfenv', 'module', 'newproxy', 'package'}) do
  rawset(real, name, nil)
end
rawset(real, 'redis', readonly(redis))
rawset(real, 'math', readonly(math_lib))
local string_view = readonly(string)
rawset(real, 'string', string_view)
-- In Redis a string's metatable is read-only and its __index is the
-- scripts' `string`. getmetatable('') answers `__metatable` when set, so
-- scripts see a read-only view of that shape, and the real string library
-- behind the method calls stays out of their reach.
dbg.getmetatable('').__metatable = readonly({__index = string_view})
rawset(real, 'rawset', w.rawset)
rawset(real, 'table', readonly(table))
rawset(real, 'coroutine', readonly(coroutine))
rawset(real, 'pcall', redis_pcall)

-- The scripts' environment: empty, so every read and write goes through
-- the metatable. Reads fall through to the real globals as a table, so the
-- VM finds a global without calling Lua (a function here was a Lua call
-- for every global a script read); only a miss reaches the real globals'
-- own __index, which raises from the script's frame (level 2) as before.
setmetatable(real, {
  __index = function(_, k)
    if k ~= 'loadstring' then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
  end,
  __metatable = false,
})
local env = setmetatable({}, {
  __index = real,
  __newindex = function() error('Attempt to modify a readonly table', 2) end,
  __metatable = false,
})
readonly_views[env] = true
rawset(real, '_G', env)

-- __redis__err__handler, except that it looks for the script's own frame
-- (our library functions are Lua, Redis's are C).
local function err_handler(err)
  local info
  for level = 2, 64 do
    local i = dbg.getinfo(level, 'nSl')
    if not i then break end
    if i.source == '@user_script' then info = i; break end
  end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if info then
    err['source'] = info.source
    err['line'] = info.currentline
  end
  return err
end

local function run(f)
  keys_argv()
  return xpcall(f, err_handler)
end

return set_backend, run, env
end

return impls, finish
"#;

/// Redis's rand48 (`redisLrand48`), shared with `math.random`.
#[derive(Clone)]
pub(crate) struct Rand48(Rc<Cell<u64>>);

impl Rand48 {
    const MASK: u64 = (1 << 48) - 1;
    const A: u64 = 0x5_DEEC_E66D;
    const C: u64 = 0xB;

    /// Seeded like `redisSrand48(0)`.
    pub(crate) fn new() -> Self {
        let r = Rand48(Rc::new(Cell::new(0)));
        r.seed(0);
        r
    }

    pub(crate) fn seed(&self, seed: i32) {
        self.0
            .set((((seed as u32) as u64) << 16 | 0x330E) & Self::MASK);
    }

    pub(crate) fn next(&self) -> u32 {
        let x = (Self::A.wrapping_mul(self.0.get()).wrapping_add(Self::C)) & Self::MASK;
        self.0.set(x);
        (x >> 17) as u32
    }
}

/// Calls upvalue 1 with all arguments, unprotected, and returns all its
/// results: a C function, as Redis's library functions are.
///
/// Why: Lua 5.1 keeps a script's frame on the stack when it tail-calls a C
/// function but replaces it when it tail-calls a Lua function, and Redis's
/// error positions (`on @user_script:1.`) come from that frame. So every
/// library function that can raise sits behind this trampoline.
unsafe extern "C-unwind" fn trampoline(state: *mut mlua::ffi::lua_State) -> std::os::raw::c_int {
    // A "plain old frame": no destructors, so a Lua error may longjmp
    // through it. LUA_MINSTACK guarantees the one extra slot used here.
    let nargs = mlua::ffi::lua_gettop(state);
    mlua::ffi::lua_pushvalue(state, mlua::ffi::lua_upvalueindex(1));
    mlua::ffi::lua_insert(state, 1);
    mlua::ffi::lua_call(state, nargs, mlua::ffi::LUA_MULTRET);
    mlua::ffi::lua_gettop(state)
}

fn c_trampoline(lua: &Lua, implementation: Function) -> mlua::Result<Function> {
    // SAFETY: pops the one pushed argument as the closure's upvalue and
    // leaves exactly the new closure on the stack.
    unsafe {
        lua.exec_raw::<Function>(implementation, |state| {
            mlua::ffi::lua_pushcclosure(state, trampoline, 1);
        })
    }
}

/// What serves a script's `redis.call`: runs one command, returns its reply.
pub(crate) type Backend<'a> = dyn Fn(&[Vec<u8>]) -> Frame + 'a;

/// The script call running now, as the C functions see it: its backend,
/// `KEYS` and `ARGV`. Lifetimes erased; valid while
/// [`BackendSlot::serving`] runs (see there).
#[derive(Clone, Copy)]
struct ScriptCall {
    backend: NonNull<Backend<'static>>,
    keys: NonNull<[Vec<u8>]>,
    argv: NonNull<[Vec<u8>]>,
}

/// What the engine's C functions (`backend`, `backend_table`,
/// `keys_argv`), made once with the engine, read: the script call running
/// now, and the reply being handed to Lua.
///
/// Why not a function made per call: `Lua::scope` and a Rust function
/// created and destroyed for each script, with two Lua calls to install and
/// remove it, were about a third of a script call (profiled: ~13,000 of
/// ~41,000 instructions under hotspot-load).
#[derive(Default)]
struct BackendState {
    current: Cell<Option<ScriptCall>>,
    /// The reply while [`push_reply`] builds its Lua value: kept here, not
    /// on the C function's frame, because a memory error while building
    /// longjmps over that frame, and a Rust frame that a longjmp skips must
    /// own nothing with a destructor. Emptied after each reply is built,
    /// and when the script call returns (should building one have raised).
    /// A `Cell`, not a `RefCell`: nothing here can panic over a borrow.
    parked: Cell<Option<Frame>>,
    /// The first panic of the backend during this script call, carried
    /// across the Lua frames (which a Rust unwind must not cross) and
    /// resumed when the script call returns to Rust
    /// (`LuaEngine::run_inner`). While it is pending, every `redis.call`
    /// raises at once without reaching the server: a script that catches
    /// the error with `pcall` can run on, but never touches the half-done
    /// server again, and the panic that is resumed is the first.
    panicked: Cell<Option<Box<dyn std::any::Any + Send>>>,
}

/// The engine's handle on its [`BackendState`]; the C functions hold its
/// address as an upvalue, and the engine keeps it alive as long as the
/// state (see [`LuaEngine`]).
#[derive(Clone, Default)]
struct BackendSlot(Rc<BackendState>);

impl BackendSlot {
    /// Runs `call` with `redis.call` served by `backend` and `keys_argv`
    /// handing out `keys` and `argv`, then puts back what the slot held
    /// before, however `call` ends (scripts do not nest, but a slot that
    /// restores cannot be left dangling by one that did). A closure, not a
    /// guard handed out: nothing can forget to remove it.
    fn serving<R>(
        &self,
        backend: &Backend<'_>,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        call: impl FnOnce() -> R,
    ) -> R {
        // SAFETY: only the lifetime is erased (same fat pointer). The
        // pointers are stored while `call` runs, everything they point to
        // outlives this function, and the guard below removes them before
        // it returns or unwinds; they are dereferenced only by the C
        // functions, which run only inside `call`.
        let backend: NonNull<Backend<'static>> =
            unsafe { std::mem::transmute::<NonNull<Backend<'_>>, _>(NonNull::from(backend)) };
        let running = ScriptCall {
            backend,
            keys: NonNull::from(keys),
            argv: NonNull::from(argv),
        };
        let _restore = BackendGuard {
            slot: self,
            previous: self.0.current.replace(Some(running)),
        };
        call()
    }
}

impl BackendState {
    /// Runs `args` on the installed backend and parks the reply (an error
    /// when no script runs: Lua code runs only inside `run`, which installs
    /// a backend, but a slot is not trusted to be full). `args` is consumed
    /// here, so the caller's frame owns nothing afterwards.
    ///
    /// `false` when the backend panicked, now or earlier in this script
    /// call: the first panic is kept in `panicked` and no reply is parked.
    fn serve_and_park(&self, args: Vec<Vec<u8>>) -> bool {
        if self.panic_pending() {
            return false;
        }
        let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match self.current.get() {
                // SAFETY: installed, so alive (see `BackendSlot::serving`).
                Some(running) => {
                    let backend = unsafe { running.backend.as_ref() };
                    backend(&args)
                }
                None => Frame::error("ERR redis.call with no script running"),
            }
        }));
        drop(args);
        match served {
            Ok(reply) => {
                self.parked.set(Some(reply));
                true
            }
            Err(panic) => {
                self.panicked.set(Some(panic));
                false
            }
        }
    }

    /// Whether a panic of the backend waits to be resumed.
    fn panic_pending(&self) -> bool {
        let panic = self.panicked.take();
        let pending = panic.is_some();
        self.panicked.set(panic);
        pending
    }
}

/// Puts back what the slot held when a script call ends, however it ends.
struct BackendGuard<'s> {
    slot: &'s BackendSlot,
    previous: Option<ScriptCall>,
}

impl Drop for BackendGuard<'_> {
    fn drop(&mut self) {
        self.slot.0.current.set(self.previous);
    }
}

/// `backend(...)`, the prelude's fast path of `redis.call`: runs the
/// command its arguments name when every one is a string, and returns
/// `true, reply` or `false, error text`; returns nothing, before running
/// anything, when there are no arguments or one is not a string (the
/// prelude then checks and converts them as Redis does and calls
/// [`backend_table`]).
///
/// Why C, not an mlua function: mlua takes a Rust callback's arguments
/// through registry references and runs it inside a protected call, and
/// the prelude had to gather the arguments in a table for it; that was
/// more than half of a `redis.call` (profiled: ~3,100 of ~5,700
/// instructions, the command itself ~900).
unsafe extern "C-unwind" fn backend_args(state: *mut mlua::ffi::lua_State) -> c_int {
    use mlua::ffi;
    let n = ffi::lua_gettop(state);
    if n == 0 || (1..=n).any(|i| ffi::lua_type(state, i) != ffi::LUA_TSTRING) {
        return 0;
    }
    // Strings only: reading them neither allocates nor raises.
    let args: Vec<Vec<u8>> = (1..=n).map(|i| lua_bytes(state, i).to_vec()).collect();
    serve_and_push(state, args)
}

/// `backend_table(argv, n)`: [`backend_args`] for arguments the prelude has
/// checked and converted into the table `argv` (`argv[1..n]`, strings).
unsafe extern "C-unwind" fn backend_table(state: *mut mlua::ffi::lua_State) -> c_int {
    use mlua::ffi;
    // The prelude passes `select('#', ...)`; clamped so the raw gets'
    // index conversion cannot fail.
    let n = ffi::lua_tointeger(state, 2).clamp(0, ffi::lua_Integer::from(c_int::MAX));
    let mut args = Vec::new();
    for i in 1..=n {
        // A raw get neither allocates nor raises; the slot is popped at once.
        ffi::lua_rawgeti(state, 1, i);
        let is_string = ffi::lua_type(state, -1) == ffi::LUA_TSTRING;
        if is_string {
            args.push(lua_bytes(state, -1).to_vec());
        }
        ffi::lua_pop(state, 1);
        if !is_string {
            // The prelude converts every argument first; refuse rather
            // than trust it, with the words Redis uses.
            drop(args);
            ffi::lua_pushboolean(state, 0);
            ffi::lua_pushstring(
                state,
                c"ERR Lua redis lib command arguments must be strings or integers".as_ptr(),
            );
            return 2;
        }
    }
    serve_and_push(state, args)
}

/// The bytes of the string at `index`, borrowed from the Lua state (valid
/// while the value stays on the stack).
///
/// # Safety
/// The value at `index` must be a string.
unsafe fn lua_bytes<'a>(state: *mut mlua::ffi::lua_State, index: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let text = mlua::ffi::lua_tolstring(state, index, &mut len);
    std::slice::from_raw_parts(text.cast::<u8>(), len)
}

/// Serves `args` on the backend whose [`BackendState`] is the C function's
/// upvalue 1 and pushes `true, reply` or `false, error text`: 2 results.
///
/// # Safety
/// Called from a C function made by [`backend_function`], with Lua's
/// LUA_MINSTACK slots free. Pushing may raise a memory error (a longjmp):
/// nothing owned is alive on this frame or below it while it pushes.
unsafe fn serve_and_push(state: *mut mlua::ffi::lua_State, args: Vec<Vec<u8>>) -> c_int {
    use mlua::ffi;
    let shared = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<BackendState>();
    if !shared.serve_and_park(args) {
        // Ends the script as an error; `run_inner` resumes the panic.
        ffi::lua_pushstring(state, c"redis.call: the simulated server panicked".as_ptr());
        ffi::lua_error(state);
    }
    {
        // SAFETY: read in place through a raw pointer, so nothing owned is
        // on this frame; nothing writes `parked` until this reply is built
        // (no Lua code runs while pushing, and the collector's finalizers
        // are mlua's own, which do not reach this state).
        let Some(reply) = (*shared.parked.as_ptr()).as_ref() else {
            // `serve_and_park` parks a reply when it returns true; should
            // that ever fail, answer rather than panic through Lua's frames.
            ffi::lua_pushboolean(state, 0);
            ffi::lua_pushstring(state, c"ERR redis.call lost its reply".as_ptr());
            return 2;
        };
        match reply {
            Frame::Error(text) => {
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
            }
            reply => {
                ffi::lua_pushboolean(state, 1);
                push_reply(state, reply);
            }
        }
    }
    shared.parked.set(None);
    2
}

/// Pushes `frame` as Redis 7.0 hands a reply to a script (see the module
/// doc: status → `{ok=...}`, error → `{err=...}`, integer → number, bulk →
/// string, nil → false, array → table). Raw sets on new tables: no
/// metamethod, no script code runs.
///
/// # Safety
/// As [`serve_and_push`]: may longjmp on a memory error or a stack that
/// cannot grow; owns nothing.
unsafe fn push_reply(state: *mut mlua::ffi::lua_State, frame: &Frame) {
    use mlua::ffi;
    // Each level holds its table and one item (or a key and its value).
    ffi::luaL_checkstack(state, 3, c"reply nested too deep".as_ptr());
    match frame {
        Frame::Simple(text) | Frame::Error(text) => {
            let key = if matches!(frame, Frame::Simple(_)) {
                c"ok"
            } else {
                c"err"
            };
            ffi::lua_createtable(state, 0, 1);
            ffi::lua_pushstring(state, key.as_ptr());
            ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
            ffi::lua_rawset(state, -3);
        }
        Frame::Integer(n) => ffi::lua_pushnumber(state, *n as f64),
        Frame::Bulk(bytes) => {
            ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
        }
        Frame::Null | Frame::NullArray => ffi::lua_pushboolean(state, 0),
        Frame::Array(items) => {
            ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
            for (i, item) in items.iter().enumerate() {
                push_reply(state, item);
                ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
            }
        }
    }
}

/// `keys_argv()`, called by the prelude's `run` before the script: sets
/// the globals `KEYS` and `ARGV` to new arrays of the running call's keys
/// and arguments (empty when none runs, which `run` never allows).
///
/// Why C, called from `run` inside mlua's protected call of it: made from
/// Rust through mlua (`exec_raw`), each script paid a protected call of its
/// own, with mlua's set-up around it, to build them (profiled: ~3,200
/// instructions a script). Raw sets on the real globals, as before, so no
/// metamethod runs. A memory error here (heap near the cap) comes before
/// the script's `xpcall`, so its reply reads `ERR Error running script
/// <sha>, memory error: not enough memory` rather than the script error's
/// wording.
unsafe extern "C-unwind" fn keys_argv(state: *mut mlua::ffi::lua_State) -> c_int {
    use mlua::ffi;
    let shared = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<BackendState>();
    let (keys, argv): (&[Vec<u8>], &[Vec<u8>]) = match shared.current.get() {
        // SAFETY: installed, so alive (see `BackendSlot::serving`).
        Some(running) => (running.keys.as_ref(), running.argv.as_ref()),
        None => (&[], &[]),
    };
    // Borrowed slices and plain integers only: a memory error here may
    // longjmp over this frame (it ends the script call as an error).
    // By reference: an array iterated by value is an `IntoIter`, which has
    // a destructor.
    for &(name, items) in &[(c"KEYS", keys), (c"ARGV", argv)] {
        ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
        ffi::lua_pushstring(state, name.as_ptr());
        ffi::lua_insert(state, -2);
        ffi::lua_rawset(state, ffi::LUA_GLOBALSINDEX);
    }
    0
}

/// A C closure of `implementation` over the address of `shared`, which the
/// state itself keeps alive (as app data) for as long as the closure can run.
fn backend_function(
    lua: &Lua,
    shared: &Rc<BackendState>,
    implementation: unsafe extern "C-unwind" fn(*mut mlua::ffi::lua_State) -> c_int,
) -> mlua::Result<Function> {
    let address = Rc::as_ptr(shared).cast_mut().cast::<std::ffi::c_void>();
    // SAFETY: pushes one light userdata and turns it into the closure's
    // upvalue, leaving exactly the new closure on the stack.
    unsafe {
        lua.exec_raw::<Function>((), |state| {
            mlua::ffi::lua_pushlightuserdata(state, address);
            mlua::ffi::lua_pushcclosure(state, implementation, 1);
        })
    }
}

/// One Lua state with the Redis environment installed.
pub(crate) struct LuaEngine {
    pub lua: Lua,
    /// The script call running now (its backend, `KEYS`, `ARGV`), the
    /// reply being handed to Lua and a pending server panic, read by the
    /// state's C functions.
    backend: BackendSlot,
    run: Function,
    env: Table,
    /// Instructions executed by the current call (checked by the hook).
    instructions: Rc<Cell<u64>>,
    /// The generator `math.random` reads: the instance's that holds this
    /// engine ([`LuaEngine::use_rand`]).
    rand: Rc<RefCell<Rand48>>,
    /// Scripts compiled in this state, by body, kept across the instances
    /// that take the engine from the pool (at most [`COMPILED_MAX`]).
    compiled: RefCell<BTreeMap<Vec<u8>, Function>>,
}

impl LuaEngine {
    /// A new state; `math.random` uses a generator of its own until
    /// [`LuaEngine::use_rand`].
    pub(crate) fn new() -> mlua::Result<Self> {
        // SAFETY: `debug` is needed by the error handler, as in Redis; the
        // prelude keeps it in a local and removes it from the globals, so
        // scripts never see it. No C modules can be loaded (no `package`).
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::new().catch_rust_panics(false),
            )
        };
        lua.set_memory_limit(MEMORY_BYTES_MAX)?;
        let rand = Rc::new(RefCell::new(Rand48::new()));
        let slot = rand.clone();
        let rand48 = lua.create_function(move |_, (op, seed): (String, Option<f64>)| {
            let rand = slot.borrow();
            if op == "seed" {
                rand.seed(seed.unwrap_or(0.0) as i32);
                Ok(0.0)
            } else {
                Ok(f64::from(rand.next()))
            }
        })?;
        let sha1hex = lua.create_function(|_, s: mlua::LuaString| {
            Ok(sha1_smol::Sha1::from(&*s.as_bytes()).digest().to_string())
        })?;
        let debug: Table = lua.globals().get("debug")?;
        let (impls, finish): (Table, Function) =
            load_cached(&lua, PRELUDE.as_bytes(), "=redfence_prelude", None)?
                .call((rand48, sha1hex, debug))?;
        let wrapped = lua.create_table()?;
        for name in [
            "call",
            "sha1hex",
            "log",
            "setresp",
            "random",
            "randomseed",
            "rawset",
        ] {
            let implementation: Function = impls.get(name)?;
            wrapped.set(name, c_trampoline(&lua, implementation)?)?;
        }
        let (set_backend, run, env): (Function, Function, Table) = finish.call(wrapped)?;
        let backend = BackendSlot::default();
        lua.set_app_data(backend.0.clone());
        set_backend.call::<()>((
            backend_function(&lua, &backend.0, backend_args)?,
            backend_function(&lua, &backend.0, backend_table)?,
            backend_function(&lua, &backend.0, keys_argv)?,
        ))?;
        let instructions = Rc::new(Cell::new(0u64));
        let counter = instructions.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY_INSTRUCTIONS),
            move |_, _| {
                let n = counter.get() + u64::from(HOOK_EVERY_INSTRUCTIONS);
                counter.set(n);
                if n > INSTRUCTIONS_MAX {
                    return Err(mlua::Error::runtime(
                        "Script exceeded the simulation's instruction limit",
                    ));
                }
                Ok(VmState::Continue)
            },
        )?;
        Ok(Self {
            lua,
            backend,
            run,
            env,
            instructions,
            rand,
            compiled: RefCell::new(BTreeMap::new()),
        })
    }

    /// Makes `math.random` and `math.randomseed` use `rand`, the generator
    /// of the instance that now holds this engine.
    pub(crate) fn use_rand(&self, rand: Rand48) {
        *self.rand.borrow_mut() = rand;
    }

    /// Puts the state back as a new one is for the next instance: no
    /// `KEYS`/`ARGV`, the generator detached, the collector running with
    /// Lua's default pause and step (a script may have stopped or tuned it
    /// with `collectgarbage`), and at most [`RESET_HEAP_BYTES_MAX`] in the
    /// heap unless live data alone is more. (No backend is installed
    /// between script calls.) The compiled scripts stay (see `lua_pool.rs`
    /// for why that is safe).
    ///
    /// Why not a full collection every time: it walks the whole heap (the
    /// prelude, the libraries, every compiled script), about 130,000
    /// instructions, 2-4% of a short simulated run (callgrind, harness
    /// bench), while what a run's scripts leave is a few kilobytes that the
    /// incremental collector frees during the next instance's scripts, as it
    /// would in one long-lived server. Above the bound the collection is
    /// made.
    pub(crate) fn reset(&self) -> mlua::Result<()> {
        let globals = self.lua.globals();
        globals.raw_set("KEYS", Value::Nil)?;
        globals.raw_set("ARGV", Value::Nil)?;
        self.use_rand(Rand48::new());
        self.instructions.set(0);
        // Constant time, unlike the collection: the collector as a new
        // state has it. (mlua 0.12 does not export its `GcMode` parameters,
        // hence the raw calls.)
        self.lua.gc_restart();
        // SAFETY: `lua_gc` with SETPAUSE/SETSTEPMUL only sets two collector
        // fields; it pushes and pops nothing and cannot raise.
        unsafe {
            self.lua.exec_raw::<()>((), |state| {
                mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSETPAUSE, LUA_GC_PAUSE_DEFAULT);
                mlua::ffi::lua_gc(
                    state,
                    mlua::ffi::LUA_GCSETSTEPMUL,
                    LUA_GC_STEP_MULTIPLIER_DEFAULT,
                );
            })?;
        }
        if self.heap_bytes() > RESET_HEAP_BYTES_MAX {
            self.lua.gc_collect()?;
        }
        Ok(())
    }

    /// Bytes the Lua heap holds now (live data and garbage not yet freed).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.lua.used_memory()
    }

    /// Compiles a script body as Redis does (chunk `@user_script`, text
    /// only). `Err` carries Lua's message, e.g. `user_script:1: ...`.
    pub(crate) fn compile(&self, body: &[u8]) -> Result<Function, String> {
        if let Some(function) = self.compiled.borrow().get(body) {
            return Ok(function.clone());
        }
        let function =
            load_cached(&self.lua, body, "@user_script", Some(&self.env)).map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                other => other.to_string(),
            })?;
        let mut compiled = self.compiled.borrow_mut();
        if compiled.len() < COMPILED_MAX {
            compiled.insert(body.to_vec(), function.clone());
        }
        Ok(function)
    }

    /// Runs `function` with `KEYS`/`ARGV`, `backend` serving `redis.call`.
    /// Returns the reply (script errors become error replies).
    pub(crate) fn run(
        &self,
        function: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        backend: &Backend<'_>,
    ) -> Frame {
        match self.run_inner(function, sha, keys, argv, backend) {
            Ok(frame) => frame,
            Err(e) => Frame::error(format!("ERR Error running script {sha}, {e}")),
        }
    }

    fn run_inner(
        &self,
        function: &Function,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        backend: &Backend<'_>,
    ) -> mlua::Result<Frame> {
        // What `keys_argv` builds in the state is bounded.
        assert!(
            keys.len() + argv.len() <= ARRAY_LEN_MAX,
            "a command's arguments are bounded"
        );
        self.instructions.set(0);
        let result = self.backend.serving(backend, keys, argv, || {
            self.run.call::<mlua::MultiValue>(function.clone())
        });
        // A panic of the server under `redis.call` ended the script as a
        // Lua error (Rust must not unwind through Lua's C frames); it goes
        // on from here, as if the server had been called from Rust.
        // A reply whose building raised stays parked until here: it is
        // one too large for the heap cap, and must not wait in the pool.
        self.backend.0.parked.set(None);
        if let Some(panic) = self.backend.0.panicked.take() {
            std::panic::resume_unwind(panic);
        }
        let mut values = result?.into_iter();
        let ok = matches!(values.next(), Some(Value::Boolean(true)));
        let value = values.next().unwrap_or(Value::Nil);
        // Reading the reply only reads (raw gets, no metamethods, no script
        // code), but with a cap each read that makes a key string is a
        // protected call (profiled: ~5,600 instructions a reply).
        uncapped(&self.lua, || {
            Ok(if ok {
                lua_to_frame(&value, 0)
            } else {
                script_error(&value, sha)
            })
        })
    }
}

/// Runs `build` without the Lua heap cap, then puts the cap back.
///
/// Why: with a cap set, mlua makes every string it creates from Rust inside
/// a protected call, and reading a script's reply makes one for each key it
/// looks up (profiled: ~5,600 instructions a reply). Reading allocates
/// nothing else; the script's own allocations, and `KEYS`, `ARGV` and the
/// `redis.call` replies built in C, stay capped.
fn uncapped<T>(lua: &Lua, build: impl FnOnce() -> mlua::Result<T>) -> mlua::Result<T> {
    lua.set_memory_limit(0)?;
    let built = build();
    lua.set_memory_limit(MEMORY_BYTES_MAX)?;
    built
}

/// `(long long)d` as x86-64 computes it: truncation, and i64::MIN for NaN
/// and anything out of range (cvttsd2si's "integer indefinite").
pub(crate) fn lua_number_to_i64(d: f64) -> i64 {
    if d.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// Lua→Redis for a script's return value.
pub(crate) fn lua_to_frame(value: &Value, depth: usize) -> Frame {
    if depth > REPLY_DEPTH_MAX {
        return Frame::error("ERR reached lua stack limit");
    }
    match value {
        Value::Nil => Frame::Null,
        Value::Boolean(true) => Frame::Integer(1),
        Value::Boolean(false) => Frame::Null,
        Value::Integer(n) => Frame::Integer(*n),
        Value::Number(d) => Frame::Integer(lua_number_to_i64(*d)),
        Value::String(s) => Frame::Bulk(s.as_bytes().to_vec()),
        Value::Table(t) => table_to_frame(t, depth),
        _ => Frame::Null,
    }
}

fn table_to_frame(t: &Table, depth: usize) -> Frame {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        return Frame::error(&*e.as_bytes());
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        return Frame::simple(&*s.as_bytes());
    }
    let mut items = Vec::new();
    for i in 1.. {
        let item = t.raw_get::<Value>(i).unwrap_or(Value::Nil);
        if item.is_nil() {
            break;
        }
        if items.len() >= ARRAY_LEN_MAX {
            return Frame::error("ERR script reply too large");
        }
        items.push(lua_to_frame(&item, depth + 1));
    }
    Frame::Array(items)
}

/// `lua_tostring` semantics: strings and numbers (as Lua prints them).
fn lua_text(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(d) => Some(lua_number_text(*d).into_bytes()),
        _ => None,
    }
}

/// Lua 5.1's `%.14g` for the numbers an error position carries (line
/// numbers): integral values print without a fraction.
fn lua_number_text(d: f64) -> String {
    if d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{}", d as i64)
    } else {
        format!("{d}")
    }
}

/// The reply for a script that raised: Redis 7.0's `luaCallFunction` text,
/// `<err> script: <sha>, on <source>:<line>.`
fn script_error(value: &Value, sha: &str) -> Frame {
    let Value::Table(t) = value else {
        let msg = lua_text(value).unwrap_or_else(|| b"execution failure".to_vec());
        let mut text = format!("ERR Error running script {sha}, ").into_bytes();
        text.extend_from_slice(&msg[..msg.len().min(100)]);
        return Frame::error(text);
    };
    let field = |name: &str| lua_text(&t.raw_get::<Value>(name).unwrap_or(Value::Nil));
    // Redis 7.0.15 crashes on an error table without `err`; answer instead.
    let mut text =
        field("err").unwrap_or_else(|| b"ERR script raised an error table without 'err'".to_vec());
    if let (Some(source), Some(line)) = (field("source"), field("line")) {
        text.extend_from_slice(format!(" script: {sha}, on ").as_bytes());
        text.extend_from_slice(&source);
        text.push(b':');
        text.extend_from_slice(&line);
        text.push(b'.');
    }
    Frame::error(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_redis() {
        // redis-server 7.0.15: math.randomseed(0) then math.random(1000000) x3
        // gives 170829, 749902, 96372.
        let r = Rand48::new();
        r.seed(0);
        let draws: Vec<u64> = (0..3)
            .map(|_| {
                let x = f64::from(r.next() % 2_147_483_647) / 2_147_483_647.0;
                (x * 1_000_000.0).floor() as u64 + 1
            })
            .collect();
        assert_eq!(draws, vec![170_829, 749_902, 96_372]);
    }

    #[test]
    fn number_truncation_is_x86s() {
        assert_eq!(lua_number_to_i64(3.99), 3);
        assert_eq!(lua_number_to_i64(-3.99), -3);
        assert_eq!(lua_number_to_i64(1e20), i64::MIN);
        assert_eq!(lua_number_to_i64(f64::NAN), i64::MIN);
        assert_eq!(lua_number_to_i64(f64::INFINITY), i64::MIN);
    }

    fn eval(engine: &LuaEngine, body: &str) -> Frame {
        let f = engine.compile(body.as_bytes()).unwrap();
        engine.run(&f, "sha", &[], &[], &|args| {
            if args[0] == b"ping" {
                Frame::simple("PONG")
            } else if args[0] == b"get" {
                Frame::Null
            } else {
                Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
        })
    }

    #[test]
    fn conversion_rules() {
        let e = LuaEngine::new().unwrap();
        assert_eq!(
            eval(&e, "return {1,2,nil,3}"),
            Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)])
        );
        assert_eq!(
            eval(&e, "return {1,false,'x',true}"),
            Frame::Array(vec![
                Frame::Integer(1),
                Frame::Null,
                Frame::bulk("x"),
                Frame::Integer(1)
            ])
        );
        assert_eq!(eval(&e, "return {ok='fine'}"), Frame::simple("fine"));
        assert_eq!(eval(&e, "return {err='bad'}"), Frame::error("bad"));
        assert_eq!(eval(&e, "return {err=5}"), Frame::Array(vec![]));
        assert_eq!(eval(&e, "return 3.99"), Frame::Integer(3));
        assert_eq!(eval(&e, "return nil"), Frame::Null);
        assert_eq!(eval(&e, "return redis.call('get','k')"), Frame::Null);
        assert_eq!(
            eval(&e, "return type(redis.call('get','k'))"),
            Frame::bulk("boolean")
        );
        assert_eq!(
            eval(&e, "return redis.call('ping')['ok']"),
            Frame::bulk("PONG")
        );
        assert_eq!(
            eval(&e, "return redis.error_reply('x')"),
            Frame::error("ERR x")
        );
        assert_eq!(
            eval(&e, "return redis.error_reply('MY x')"),
            Frame::error("MY x")
        );
        assert_eq!(
            eval(&e, "return redis.status_reply('s')"),
            Frame::simple("s")
        );
        assert_eq!(
            eval(&e, "return redis.pcall('incr','k')"),
            Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        let t = "local t = {}; t[1] = t; return t";
        assert!(matches!(eval(&e, t), Frame::Array(_)));
    }

    #[test]
    fn errors_are_worded_as_redis_words_them() {
        let e = LuaEngine::new().unwrap();
        assert_eq!(
            eval(&e, "return redis.call('incr','k')"),
            Frame::error(
                "WRONGTYPE Operation against a key holding the wrong kind of value script: sha, on @user_script:1."
            )
        );
        assert_eq!(
            eval(&e, "error('x')"),
            Frame::error("ERR user_script:1: x script: sha, on @user_script:1.")
        );
        assert_eq!(
            eval(&e, "\n\nerror({err='y'})"),
            Frame::error("y script: sha, on @user_script:3.")
        );
        assert_eq!(
            eval(&e, "return os"),
            Frame::error(
                "ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: sha, on @user_script:1."
            )
        );
        assert_eq!(
            eval(&e, "x = 1"),
            Frame::error("ERR user_script:1: Attempt to modify a readonly table script: sha, on @user_script:1.")
        );
        assert_eq!(
            eval(&e, "local ok, m = pcall(redis.call, 'incr', 'k'); return m"),
            Frame::bulk("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        assert_eq!(
            e.compile(b"return 1 +").unwrap_err(),
            "user_script:1: unexpected symbol near '<eof>'"
        );
    }

    #[test]
    fn runaway_scripts_are_stopped() {
        let e = LuaEngine::new().unwrap();
        assert!(eval(&e, "while true do end").is_error());
        // The engine stays usable afterwards.
        assert_eq!(eval(&e, "return 7"), Frame::Integer(7));
    }

    /// The heap cap holds for what a script allocates, also after a
    /// `redis.call` (whose reply is built with the cap lifted): a string
    /// past the cap is an error, not 300 MB allocated.
    #[test]
    fn a_script_past_the_heap_cap_fails_even_after_a_call() {
        let e = LuaEngine::new().unwrap();
        let over = MEMORY_BYTES_MAX + 44 * 1024 * 1024;
        for body in [
            format!("return #string.rep('x', {over})"),
            format!("redis.call('ping'); return #string.rep('x', {over})"),
        ] {
            let reply = eval(&e, &body);
            assert!(reply.is_error(), "{body}: {reply:?}");
        }
        // Under the cap, the same script runs.
        assert_eq!(
            eval(&e, "redis.call('ping'); return #string.rep('x', 1024)"),
            Frame::Integer(1024)
        );
    }
    #[test]
    fn each_call_is_served_by_its_own_backend_and_none_is_left_installed() {
        let e = LuaEngine::new().unwrap();
        let f = e
            .compile(b"return {redis.call('get', KEYS[1]), ARGV[1], #KEYS, #ARGV}")
            .unwrap();
        let keys = [b"k".to_vec()];
        for (backend_value, argv) in [
            (b"one".to_vec(), b"a".to_vec()),
            (b"two".to_vec(), b"b".to_vec()),
        ] {
            let seen = RefCell::new(Vec::new());
            let reply = e.run(&f, "sha", &keys, std::slice::from_ref(&argv), &|args| {
                seen.borrow_mut().push(args.to_vec());
                Frame::Bulk(backend_value.clone())
            });
            assert_eq!(
                reply,
                Frame::Array(vec![
                    Frame::Bulk(backend_value.clone()),
                    Frame::Bulk(argv),
                    Frame::Integer(1),
                    Frame::Integer(1),
                ])
            );
            assert_eq!(*seen.borrow(), vec![vec![b"get".to_vec(), b"k".to_vec()]]);
            assert!(
                e.backend.0.current.get().is_none(),
                "the backend is removed on return"
            );
        }
        // A script that raises leaves nothing installed either.
        let raised = eval(&e, "redis.call('nope'); return 1");
        assert!(raised.is_error(), "{raised:?}");
        assert!(e.backend.0.current.get().is_none());
        // Between scripts there is no backend to serve a call.
        assert!(e.backend.0.serve_and_park(vec![b"ping".to_vec()]));
        assert_eq!(
            e.backend.0.parked.take(),
            Some(Frame::error("ERR redis.call with no script running"))
        );
    }

    #[test]
    fn arguments_that_are_not_all_strings_take_the_checked_path() {
        let e = LuaEngine::new().unwrap();
        let seen = RefCell::new(Vec::new());
        let f = e
            .compile(b"return {redis.call('set', KEYS[1], 12, 0.5), redis.call('get', KEYS[1])}")
            .unwrap();
        let reply = e.run(&f, "sha", &[b"k".to_vec()], &[], &|args| {
            seen.borrow_mut().push(args.to_vec());
            Frame::simple("OK")
        });
        assert_eq!(
            reply,
            Frame::Array(vec![Frame::simple("OK"), Frame::simple("OK")])
        );
        // Numbers as Redis formats them (`%.17g`), strings as they are.
        assert_eq!(
            *seen.borrow(),
            vec![
                vec![
                    b"set".to_vec(),
                    b"k".to_vec(),
                    b"12".to_vec(),
                    b"0.5".to_vec()
                ],
                vec![b"get".to_vec(), b"k".to_vec()],
            ]
        );
        // A table among the arguments runs nothing.
        seen.borrow_mut().clear();
        let f = e.compile(b"return redis.pcall('get', {})").unwrap();
        let reply = e.run(&f, "sha", &[], &[], &|args| {
            seen.borrow_mut().push(args.to_vec());
            Frame::Null
        });
        assert_eq!(
            reply,
            Frame::error("ERR Lua redis lib command arguments must be strings or integers")
        );
        assert!(seen.borrow().is_empty());
    }

    #[test]
    fn a_server_panic_under_a_script_goes_on_in_rust_and_the_engine_still_works() {
        let e = LuaEngine::new().unwrap();
        // The script catches the error and calls again, five times.
        let f = e
            .compile(b"for i = 1, 5 do pcall(redis.call, 'ping') end; return 1")
            .unwrap();
        let calls = Cell::new(0);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            e.run(&f, "sha", &[], &[], &|_| {
                calls.set(calls.get() + 1);
                if calls.get() == 1 {
                    panic!("first")
                }
                panic!("more")
            })
        }));
        let payload = panicked.expect_err("the server's panic reaches the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"first"));
        assert_eq!(calls.get(), 1, "a panicked server is not called again");
        assert!(!e.backend.0.panic_pending());
        assert!(e.backend.0.current.get().is_none());
        assert_eq!(
            eval(&e, "return redis.call('ping')['ok']"),
            Frame::Bulk(b"PONG".to_vec())
        );
    }

    #[test]
    fn a_reply_past_the_heap_cap_fails_the_script_and_the_engine_still_works() {
        let e = LuaEngine::new().unwrap();
        let f = e.compile(b"return #redis.call('get', 'k')").unwrap();
        // The backend lowers the cap below the reply it returns, so
        // building the reply in Lua raises a memory error from C.
        let reply = e.run(&f, "sha", &[], &[], &|_| {
            e.lua
                .set_memory_limit(e.lua.used_memory() + 64 * 1024)
                .unwrap();
            Frame::Bulk(vec![b'x'; 1024 * 1024])
        });
        let Frame::Error(text) = &reply else {
            panic!("{reply:?}")
        };
        assert!(
            String::from_utf8_lossy(text).contains("not enough memory"),
            "{reply:?}"
        );
        // The reply that could not be built is not kept past the call.
        assert!(e.backend.0.parked.take().is_none());
        // The cap is back and the next script runs.
        e.lua.set_memory_limit(MEMORY_BYTES_MAX).unwrap();
        let reply = e.run(&f, "sha", &[], &[], &|_| Frame::Bulk(b"abc".to_vec()));
        assert_eq!(reply, Frame::Integer(3));
        assert!(e.backend.0.parked.take().is_none());
        // `ARGV` past the cap fails the call the same way, before the
        // script runs, and the next call sees its own `ARGV`.
        let f = e.compile(b"return #ARGV[1]").unwrap();
        e.lua
            .set_memory_limit(e.lua.used_memory() + 64 * 1024)
            .unwrap();
        let reply = e.run(&f, "sha", &[], &[vec![b'x'; 1024 * 1024]], &|_| Frame::Null);
        assert!(
            matches!(&reply, Frame::Error(text) if String::from_utf8_lossy(text).contains("not enough memory")),
            "{reply:?}"
        );
        e.lua.set_memory_limit(MEMORY_BYTES_MAX).unwrap();
        let reply = e.run(&f, "sha", &[], &[b"ab".to_vec()], &|_| Frame::Null);
        assert_eq!(reply, Frame::Integer(2));
    }
}
