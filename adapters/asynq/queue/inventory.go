package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/july/template/core/ports"
)

// Inventory is ports.QueueInventory on one asynq queue. It reads asynq's
// storage layout, not its API (a task's hash asynq:{queue}:t:<id> with its
// state, and the list or sorted set of that state), so it answers for
// thousands of tasks in a few round trips; TestInventory holds the layout
// to every state on the pinned asynq version.
//
// Eviction removes whole keys, so a queue under a maxmemory policy other
// than noeviction can lose its pending list while the tasks' hashes stay:
// such a task would never run, and asynq would refuse to enqueue its id
// again. Inventory reports it as missing and removes the leftover hash, so
// the reconciler can publish the event again.
type Inventory struct {
	client redis.UniversalClient
	prefix string
}

var _ ports.QueueInventory = (*Inventory)(nil)

// NewInventory returns an Inventory of queue over a client of opt, closed
// by Close.
func NewInventory(opt asynq.RedisConnOpt, queue string) (*Inventory, error) {
	c, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok || queue == "" {
		return nil, errors.New("asynq queue: NewInventory needs a go-redis connection option and a queue name")
	}
	return &Inventory{client: c, prefix: "asynq:{" + queue + "}:"}, nil
}

// Close closes the Redis client.
func (i *Inventory) Close() error { return i.client.Close() }

// inventoryChunk is the ids per script call: a script blocks Redis, so
// each stays short.
const inventoryChunk = 500

// statesScript returns, for each id in ARGV[2..], its task's state, ""
// when there is no task, or "orphan" when the hash names a sorted set
// (scheduled, retry, archived, completed) that does not hold the id.
// Pending and active are checked by the caller against the whole list.
// Every key shares the queue's hash tag (KEYS[1] routes it in a cluster).
var statesScript = redis.NewScript(`
local prefix = ARGV[1]
local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local st = redis.call('HGET', prefix .. 't:' .. id, 'state')
  if not st then
    out[i-1] = ''
  elseif st == 'scheduled' or st == 'retry' or st == 'archived' or st == 'completed' then
    if redis.call('ZSCORE', prefix .. st, id) then out[i-1] = st else out[i-1] = 'orphan' end
  else
    out[i-1] = st
  end
end
return out
`)

// forgetScript deletes task ARGV[2]'s hash if it still has state ARGV[3]
// and its list or sorted set still does not hold it.
var forgetScript = redis.NewScript(`
local prefix, id, st = ARGV[1], ARGV[2], ARGV[3]
local key = prefix .. 't:' .. id
if redis.call('HGET', key, 'state') ~= st then return 0 end
if st ~= 'pending' and st ~= 'scheduled' and st ~= 'retry' and st ~= 'archived' and st ~= 'completed' then
  return 0
end
if st == 'pending' then
  if redis.call('LPOS', prefix .. 'pending', id) then return 0 end
elseif redis.call('ZSCORE', prefix .. st, id) then
  return 0
end
redis.call('DEL', key)
return 1
`)

// TaskStates implements ports.QueueInventory.
func (i *Inventory) TaskStates(ctx context.Context, eventIDs []string) ([]ports.QueueState, error) {
	out := make([]ports.QueueState, len(eventIDs))
	raw := make([]string, len(eventIDs))
	for start := 0; start < len(eventIDs); start += inventoryChunk {
		ids := eventIDs[start:min(start+inventoryChunk, len(eventIDs))]
		args := make([]any, 0, len(ids)+1)
		args = append(args, i.prefix)
		for _, id := range ids {
			args = append(args, id)
		}
		res, err := statesScript.Run(ctx, i.client, []string{i.prefix + "pending"}, args...).StringSlice()
		if err != nil {
			return nil, unavailable(fmt.Sprintf("read the state of %d tasks", len(ids)), err)
		}
		copy(raw[start:], res)
	}
	var pending map[string]bool
	for n, st := range raw {
		if st == string(ports.QueuePending) && pending == nil {
			var err error
			if pending, err = i.list(ctx, "pending"); err != nil {
				return nil, err
			}
		}
		switch {
		case st == "orphan", st == string(ports.QueuePending) && !pending[eventIDs[n]]:
			now, err := i.forget(ctx, eventIDs[n])
			if err != nil {
				return nil, err
			}
			out[n] = now
		default:
			out[n] = ports.QueueState(st)
		}
	}
	return out, nil
}

// list reads a whole task list (pending) as a set, in pages.
func (i *Inventory) list(ctx context.Context, name string) (map[string]bool, error) {
	const page = 10_000
	set := map[string]bool{}
	for start := int64(0); ; start += page {
		ids, err := i.client.LRange(ctx, i.prefix+name, start, start+page-1).Result()
		if err != nil {
			return nil, unavailable("read the "+name+" list", err)
		}
		for _, id := range ids {
			set[id] = true
		}
		if len(ids) < page {
			return set, nil
		}
	}
}

// forget removes a leftover task hash whose list or set lost it, and
// returns the task's state after: missing, or the state it moved to
// meanwhile (a worker took it).
func (i *Inventory) forget(ctx context.Context, id string) (ports.QueueState, error) {
	st, err := i.client.HGet(ctx, i.prefix+"t:"+id, "state").Result()
	if errors.Is(err, redis.Nil) {
		return ports.QueueMissing, nil
	}
	if err != nil {
		return "", unavailable("read task "+id, err)
	}
	gone, err := forgetScript.Run(ctx, i.client, []string{i.prefix + "t:" + id}, i.prefix, id, st).Int()
	if err != nil {
		return "", unavailable("remove the leftover of task "+id, err)
	}
	if gone == 1 {
		return ports.QueueMissing, nil
	}
	return ports.QueueState(st), nil
}
