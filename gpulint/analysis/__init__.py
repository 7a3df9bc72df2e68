"""Family-specific analyses built on the ScriptModel.

Each module defines a class taking the ScriptModel, computed lazily once per file with
`ctx.model.facts(ThatClass)` and shared by every rule of the family. They answer questions about
the script (autocast regions, training loops, wrappers...) and never import torch.
"""
