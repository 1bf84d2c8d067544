"""Turn a title into a URL slug. (Buggy on purpose: the `fix-the-tests` task asks an agent to fix it.)"""


def slugify(title: str) -> str:
    return title.replace(" ", "-")
