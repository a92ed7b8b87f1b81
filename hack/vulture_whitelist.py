"""Names Ansible reads from the collection's plugins by name, never called in the collection itself:
the whitelist of `vulture` in `make lint` (the dead-code check over plugins/). Add a name here only
when Ansible (or ansible-test) reads it; anything else vulture reports is dead code to remove."""
# pylint: disable=pointless-statement
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# modules: ansible-doc and ansible-test read the documentation strings
_.DOCUMENTATION
_.EXAMPLES
_.RETURN
# action plugins: ActionBase reads whether the module's files are transferred
_.TRANSFERS_FILES
# doc fragments: Ansible loads the class by name and reads its attributes
_.ModuleDocFragment
_.CLUSTER
# k8s/runner.py's ClientOptions.server_side_dry_run: kubernetes.core's get_api_client reads it from the
# module object it is given (tests/unit/plugins/module_utils/k8s/test_k8s_factory.py shows it)
_.server_side_dry_run
