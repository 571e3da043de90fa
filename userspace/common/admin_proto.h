/*
 * admin_proto.h - the admin socket protocol between mysteerctl (client) and
 * mysteerd (server). Shared by both sides so that a command name or a key
 * cannot drift between them.
 *
 * Transport: a UNIX stream socket at the config's `admin_socket` (mode 0600,
 * or 0660 with `admin_group`). One request per connection:
 *
 *   client -> server: ONE JSON object on one line, terminated by "\n".
 *   server -> client: ONE JSON object on one line, terminated by "\n", then
 *                     the server closes the connection.
 *
 * Requests (key "cmd" always present; other keys as listed):
 *
 *   {"cmd":"status"}
 *   {"cmd":"add","name":"db4","host":"127.0.0.1","port":3309,
 *    "priority":100,"weight":1}          priority/weight optional (defaults
 *                                        100 and 1, as in the config)
 *   {"cmd":"remove","name":"db4"}
 *   {"cmd":"set","name":"db4","priority":N}
 *   {"cmd":"set","name":"db4","weight":N}  (either or both keys)
 *   {"cmd":"drain","name":"db4"}
 *   {"cmd":"disable","name":"db4"}
 *   {"cmd":"enable","name":"db4"}
 *   {"cmd":"reload"}
 *   {"cmd":"reset"}                      drop every runtime change
 *   {"cmd":"reset","name":"db4"}         drop the changes of one backend
 *
 * "host" is the address without brackets ("::1", not "[::1]"). Numbers are
 * JSON integers.
 *
 * Replies:
 *
 *   {"ok":true}                          a change command succeeded
 *   {"ok":true,"writer":..,"backends":[..],"routes":[..], ...}
 *                                        status: the status object of
 *                                        docs/CLI.md plus "ok";
 *                                        the server may add keys, e.g.
 *                                        "cgroup" (the steered cgroup as an
 *                                        absolute directory path, "" when
 *                                        off; used by `mysteerctl exec`),
 *                                        "bpffs_dir", "pool", "generation".
 *                                        Per backend, the table also shows
 *                                        "last_probe_ms" (CLOCK_REALTIME ms
 *                                        of the last probe, 0: never) as an
 *                                        age.
 *   {"ok":false,"error":"one line reason"}
 *                                        refused: unknown backend, bad
 *                                        value, unknown command, malformed
 *                                        request. No newline inside "error".
 *
 * The client prints "mysteerctl: <error>" and exits 1 on {"ok":false}; it
 * exits 1 with "daemon not running (SOCKET: reason)" when it cannot connect.
 */
#ifndef MYSTEER_ADMIN_PROTO_H
#define MYSTEER_ADMIN_PROTO_H

#define ADMIN_DEFAULT_SOCKET "/run/mysteer/admin.sock"
/* Environment variable that overrides the default socket path in the CLI. */
#define ADMIN_SOCKET_ENV "MYSTEER_ADMIN_SOCKET"

/* A request is small; a larger one is malformed and the server may drop it. */
#define ADMIN_MAX_REQUEST 4096
/* Replies (status of many backends) may be large; the client reads to EOF. */
#define ADMIN_MAX_REPLY (16 * 1024 * 1024)

/* Request keys. */
#define ADMIN_KEY_CMD      "cmd"
#define ADMIN_KEY_NAME     "name"
#define ADMIN_KEY_HOST     "host"
#define ADMIN_KEY_PORT     "port"
#define ADMIN_KEY_PRIORITY "priority"
#define ADMIN_KEY_WEIGHT   "weight"

/* Reply keys. */
#define ADMIN_KEY_OK     "ok"
#define ADMIN_KEY_ERROR  "error"
#define ADMIN_KEY_CGROUP "cgroup"

/* Command names, as sent in "cmd" (and as typed on the mysteerctl line). */
#define ADMIN_CMD_STATUS  "status"
#define ADMIN_CMD_ADD     "add"
#define ADMIN_CMD_REMOVE  "remove"
#define ADMIN_CMD_SET     "set"
#define ADMIN_CMD_DRAIN   "drain"
#define ADMIN_CMD_DISABLE "disable"
#define ADMIN_CMD_ENABLE  "enable"
#define ADMIN_CMD_RELOAD  "reload"
#define ADMIN_CMD_RESET   "reset"

#endif
