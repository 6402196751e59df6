# expect: 3
# proves: a plausible wrong answer (approval ignores the ledger version) loses exactly that exercise
# %% answer call_decision
{{solution call_decision}}
# %% answer approve_restock
def approve_restock(question, snapshot):
    stock = {item["sku"]: item for item in snapshot["items"]}
    for line in question["payload"].get("lines") or []:
        item = stock.get(line.get("sku"))
        if item is None or item["on_hand"] + item["on_order"] + line.get("add_on_order", 0) > item["par"]:
            return "decline"
    return "accept" if question["payload"].get("lines") else "decline"
