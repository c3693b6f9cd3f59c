// Package confighttp is the HTTP face of the system-config shell
// (tb_system_config, core/configsvc): list, read and update registered keys under
// /system-configs for authenticated super admins.
//
// Authentication and authorisation are decided before any lookup, so a 401
// or 403 never tells whether a key exists. Handlers only parse and render;
// the rules live in core/sysconfig and core/configsvc, and the one place
// their errors become statuses is MapError, which the app registers with
// httpx.NewServer. Values are rendered through sysconfig.View, which masks
// sensitive and unregistered keys.
package confighttp
