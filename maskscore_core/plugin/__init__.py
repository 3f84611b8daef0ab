"""The plugin layer: hook specifications, the plugin manager, what plugins register, the records that flow between hooks, and the contract suite plugins' tests run."""
