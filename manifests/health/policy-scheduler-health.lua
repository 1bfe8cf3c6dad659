-- Argo CD health check for policy-scheduler's custom resources (SchedulingProfile,
-- EvictionPolicy, PriorityClassMirror). Conventions: status.observedGeneration, conditions
-- Accepted (spec valid), Ready (in force / in sync), Degraded (an older generation is in
-- force, or a profile's EvictionPolicy is unusable), Stalled (the latest generation cannot be
-- put in force; kstatus reads it as Failed), Synced (PriorityClassMirror: the native
-- PriorityClass matches).
local function message(condition, default)
  if condition.message ~= nil and condition.message ~= "" then
    return condition.message
  end
  return default
end

if obj.status == nil or obj.status.conditions == nil then
  return {status = "Progressing", message = "Waiting for policy-scheduler to report a status"}
end
local generation = obj.metadata.generation
if generation ~= nil and obj.status.observedGeneration ~= generation then
  return {status = "Progressing", message = "Waiting for policy-scheduler to observe generation " .. generation}
end

local conditions = {}
for _, condition in ipairs(obj.status.conditions) do
  conditions[condition.type] = condition
end

local stalled = conditions["Stalled"]
if stalled ~= nil and stalled.status == "True" then
  return {status = "Degraded", message = message(stalled, "The latest generation is not in force")}
end
local accepted = conditions["Accepted"]
if accepted ~= nil and accepted.status == "False" then
  return {status = "Degraded", message = message(accepted, "The spec was rejected")}
end
local degraded = conditions["Degraded"]
if degraded ~= nil and degraded.status == "True" then
  return {status = "Degraded", message = message(degraded, "Degraded")}
end
local synced = conditions["Synced"]
if synced ~= nil and synced.status == "False" then
  return {status = "Degraded", message = message(synced, "Not in sync")}
end
local ready = conditions["Ready"]
if ready ~= nil then
  if ready.status == "True" then
    return {status = "Healthy", message = message(ready, "Ready")}
  end
  return {status = "Progressing", message = message(ready, "Not ready yet")}
end
if accepted ~= nil and accepted.status == "True" then
  return {status = "Healthy", message = message(accepted, "Accepted")}
end
return {status = "Progressing", message = "Waiting for policy-scheduler to accept the spec"}
