"""The safety filter: a registry of named checks, each with a fire counter (SPEC §4).

Everything the chaperone fetches or reads passes through one :class:`SafetyFilter`.
A check that fails raises :class:`Refusal` carrying the check's name and a
reason in plain words, bumps that check's counter and calls the optional
``on_refusal`` callback (the chaperone logs it to the audit trail), so a silent
veto always shows up as a number.

Checks, in the order :meth:`SafetyFilter.check_url` runs the URL ones::

    scheme            a well-formed https URL with a host (no backslashes,
                      control characters, ``https:/x``, bad ports …)
    userinfo          no ``user:password@`` in the authority
    ip_literal        the host is a name, never an address in any spelling
                      (dotted, decimal, hex, octal, short, IPv6, mapped)
    domain_allowlist  the host is an allowed domain or a subdomain of one,
                      compared by DNS labels after IDNA normalisation
    port              no port but the scheme's default (443), unless the policy's
                      ``allowed_host_ports`` lists that host:port; a port must be
                      ASCII digits (``:٨٠``, ``:¹²³``, ``:+443``, ``:4_43`` are refused)
    parsers           two independent URL parsers (httpx's and urllib's) read
                      the same scheme, host, port and no user info as the
                      strict parser above; any disagreement or parse error refuses
    private_address   every address the host resolves to is public
    redirect          each redirect hop passes all of the above; at most
                      ``max_redirects`` hops
    mime              the Content-Type is on the allow-list
    max_bytes         the content is at most ``max_bytes`` (declared and streamed)
    file_count        at most ``max_files_per_session`` files per session
    rate_limit        at most ``rate_limit_requests`` requests per sliding window
    local_path        local reads stay inside the allowed directories: opened
                      through :mod:`sentient_core.confine` (component by component
                      from the allowed dir's descriptor, no symlink followed by
                      the kernel, ``..`` never above the dir, no hard links unless
                      allowed), so a path swapped meanwhile is refused, not followed

Typical use::

    safety = SafetyFilter(SafetyPolicy(incoming_dir="/data/incoming"))
    safety.check_rate()
    target = safety.check_url("https://arxiv.org/abs/2401.00001")
    addresses = safety.check_host(target.host)

Modules
-------
policy  :class:`SafetyPolicy`, the check registry :data:`CHECKS`, :class:`Refusal`
urls    the URL checks, the address check and redirect hops (:class:`~.urls.UrlRules`)
local   local reads: which allowed dir a path is in, opened there confined
filter  :class:`SafetyFilter`: counters, quotas, rate limit, content checks; runs the above
"""

from sentient_core.confine import ConfinementFailed
from sentient_core.learning.safety.filter import RefusalCallback, SafetyFilter
from sentient_core.learning.safety.policy import (
    CHECKS,
    DEFAULT_ALLOWED_DOMAINS,
    DEFAULT_ALLOWED_MIME,
    Refusal,
    SafetyPolicy,
)
from sentient_core.learning.safety.urls import Resolver, Target, system_resolver

__all__ = [
    "CHECKS",
    "DEFAULT_ALLOWED_DOMAINS",
    "DEFAULT_ALLOWED_MIME",
    "ConfinementFailed",
    "Refusal",
    "RefusalCallback",
    "Resolver",
    "SafetyFilter",
    "SafetyPolicy",
    "Target",
    "system_resolver",
]
