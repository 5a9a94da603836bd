from django.db import migrations, models


class Migration(migrations.Migration):
    """One test clock per seed: ids minted on a clock derive from its seed (timers.ids.domain_seed)."""

    dependencies = [
        ('timers', '0004_versions_and_seeds'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='testclock',
            constraint=models.UniqueConstraint(condition=models.Q(('seed', ''), _negated=True), fields=('seed',), name='test_clock_seed_once'),
        ),
    ]
